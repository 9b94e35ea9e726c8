// util/suggest: the did-you-mean behind error messages for misspelt keys,
// step classes and pipeline names.
#include <gtest/gtest.h>

#include "util/suggest.h"

namespace ductwork {
namespace {

const std::vector<std::string> kSteps = {"Echo", "Inc", "Double", "Sum", "Range", "Fail", "FailTimes",
                                         "FailPermanently", "ContextGet", "ContextSet"};

TEST(Suggest, OneTypoOfAStepNameFindsIt) {
  EXPECT_EQ(closest_match("Dubble", kSteps), "Double");   // two substitutions
  EXPECT_EQ(closest_match("Rnage", kSteps), "Range");     // two neighbours swapped: one edit
  EXPECT_EQ(closest_match("Ecco", kSteps), "Echo");
  EXPECT_EQ(closest_match("FailPermanetly", kSteps), "FailPermanently");
  EXPECT_EQ(closest_match("ContextGte", kSteps), "ContextGet");
}

TEST(Suggest, CaseIsIgnoredAndTheCandidateKeepsItsOwn) {
  EXPECT_EQ(closest_match("double", kSteps), "Double");
  EXPECT_EQ(closest_match("FAILTIMES", kSteps), "FailTimes");
  EXPECT_EQ(did_you_mean("echo", kSteps), ", did you mean 'Echo'?");
}

TEST(Suggest, TheNearestCandidateWinsAndTiesGoToTheFirst) {
  EXPECT_EQ(closest_match("FailTime", kSteps), "FailTimes") << "1 edit beats Fail's 4";
  EXPECT_EQ(closest_match("ContextSxt", kSteps), "ContextSet");
  EXPECT_EQ(closest_match("Cat", {"Bat", "Hat"}), "Bat");
  EXPECT_EQ(closest_match("Cat", {"Hat", "Bat"}), "Hat");
}

// The allowance grows with the word: a difference of case up to 2
// characters, 1 edit up to 4, 2 up to 8, 3 beyond.
TEST(Suggest, OnlyAPlausibleTypoIsSuggested) {
  EXPECT_EQ(closest_match("Su", kSteps), "") << "2 characters: only a difference of case";
  EXPECT_EQ(closest_match("sum", kSteps), "Sum");
  EXPECT_EQ(closest_match("Inx", kSteps), "Inc");
  EXPECT_EQ(closest_match("Ixx", kSteps), "") << "2 edits of 3 characters is another word";
  EXPECT_EQ(closest_match("Dbl", kSteps), "");
  EXPECT_EQ(closest_match("Doubel", kSteps), "Double");
  EXPECT_EQ(closest_match("Dxxxle", kSteps), "") << "3 edits of 6 characters";
  EXPECT_EQ(closest_match("FaxlTxmex", kSteps), "FailTimes") << "9 characters: 3 edits";
  EXPECT_EQ(closest_match("FxxxTimes", kSteps), "FailTimes");
  EXPECT_EQ(closest_match("FxxxTxxes", kSteps), "") << "5 edits";
  EXPECT_EQ(closest_match("ChargeCard", kSteps), "");
}

TEST(Suggest, QualifiedNamesAreComparedWhole) {
  const std::vector<std::string> qualified = {"testkit:Double", "testkit:Echo", "dupstep:Echo"};
  EXPECT_EQ(closest_match("testkit:Dubble", qualified), "testkit:Double");
  EXPECT_EQ(closest_match("dupstp:Echo", qualified), "dupstep:Echo");
}

// DUCTWORK_STEP(billing::Charge) exports the step "billing::Charge"; a
// definition saying Charge (or a typo of it) is pointed at it.
TEST(Suggest, ACppQualifiedStepIsFoundByItsLastName) {
  const std::vector<std::string> exported = {"Echo", "billing::Charge", "billing::Refund"};
  EXPECT_EQ(closest_match("Charge", exported), "billing::Charge");
  EXPECT_EQ(closest_match("Chrage", exported), "billing::Charge");
  EXPECT_EQ(closest_match("billing::Refnd", exported), "billing::Refund");
  EXPECT_EQ(closest_match("shipping::Charge", exported), "") << "a qualified word is compared whole";
  EXPECT_EQ(did_you_mean("Charge", exported), ", did you mean 'billing::Charge'?");
}

TEST(Suggest, NothingToSuggestFromIsEmpty) {
  EXPECT_EQ(closest_match("", kSteps), "");
  EXPECT_EQ(closest_match("Echo", {}), "");
  EXPECT_EQ(did_you_mean("Zebra", kSteps), "");
  EXPECT_EQ(did_you_mean("", {""}), "");
}

}  // namespace
}  // namespace ductwork
