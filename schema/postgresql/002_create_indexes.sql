-- Indexes for every hot query (SPEC §2).

-- Job claim: the oldest open availability of a pipeline.
CREATE INDEX index_availabilities_claim
  ON availabilities (pipeline_klass, started_at) WHERE completed_at IS NULL;

-- Branch claim: unclaimed in-progress branches whose latest step is
-- advanceable, oldest last_advanced_at first.
CREATE INDEX index_branches_claim
  ON branches (pipeline_klass, last_advanced_at)
  WHERE status = 'in_progress' AND claim_token IS NULL AND advanceable = 1;

-- Latest step of a branch; steps of a run in start order (status output).
CREATE INDEX index_steps_latest ON steps (branch_id, started_at DESC, id DESC);
CREATE INDEX index_steps_run ON steps (run_id, started_at, id);

-- Fan-in sibling scans and run terminal state.
CREATE INDEX index_branch_links_child ON branch_links (child_branch_id);
CREATE INDEX index_branches_run_status ON branches (run_id, status);

CREATE INDEX index_executions_job ON executions (job_id);
CREATE INDEX index_executions_open_owner ON executions (process_id) WHERE completed_at IS NULL;
CREATE INDEX index_results_execution ON results (execution_id);
CREATE INDEX index_transitions_branch ON transitions (branch_id, in_step_id);
CREATE INDEX index_advancements_transition ON advancements (transition_id);
CREATE INDEX index_advancements_open_owner ON advancements (process_id) WHERE completed_at IS NULL;

-- Reaper.
CREATE INDEX index_processes_heartbeat ON processes (last_heartbeat_at);

-- Dashboard / CLI filters.
CREATE INDEX index_runs_pipeline ON runs (pipeline_id, created_at);
CREATE INDEX index_pipelines_status ON pipelines (status, triggered_at);
CREATE INDEX index_pipelines_klass ON pipelines (klass, triggered_at);
