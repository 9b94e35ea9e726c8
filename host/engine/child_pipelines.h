#pragma once

#include <string>

#include "config/config.h"
#include "engine/catalog.h"
#include "engine/definition.h"
#include "engine/router.h"
#include "store/store.h"

namespace ductwork {

// Child pipelines (SPEC §18). An `invoke: PIPELINE` edge leads to a node
// that stands for the child: when the branch reaches it, the child is
// triggered in the same transaction with [previous output] as its start
// step's arguments, the node's step is written `waiting` and so is the
// branch (open: the parent's run is not over). When the child's run ends,
// the transaction that ends it hands its final output (or its halt) to that
// step, and an advancer takes the parent's branch on from there. Every
// decision is here; the store only runs the statements.

// The claimed branch's step succeeded and its edge is an invoke (router):
// starts the child that the edge's target names, or halts the branch with
// invoke_depth_exceeded when the child would nest deeper than
// pipeline_advancer.steps.max_invoke_depth. Throws a routing error (the
// advancer retries it) when this host does not define the child.
void invoke_child(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Edge& edge,
                  const Config& config, const DefinitionCache* catalog, AdvanceEffects& effects);

// How a child pipeline ended, for its parent.
enum class ChildEnd { kCompleted, kHalted, kCancelled };

// Called where a run ends (run settlement, cancel): when the run's
// pipeline was started by an invoke, the parent's waiting step gets the
// child's final output — the output of the step that ended its last
// branch, or a list of them in step order when several branches ended
// (null when none did) — and goes on, or, for a child that halted or was
// cancelled, fails with an error document as its output
// ({"error": "child_halted", "pipeline", "pipeline_id", "status"}).
// Nothing happens when the parent no longer waits (it was cancelled).
void hand_to_parent(BranchTx& tx, const std::string& run_id, ChildEnd end);

// What an advancer does with a claimed branch whose step stands for a
// child that halted (its step `failed`): halt the branch with child_halted,
// or, with `on_child_halt: continue`, route on with the error document.
void child_halted(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Config& config,
                  const DefinitionCache* catalog, AdvanceEffects& effects);

}  // namespace ductwork
