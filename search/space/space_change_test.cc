#include "search/space/space_change.h"

#include <gtest/gtest.h>

namespace tuner {
namespace {

SearchSpace base_space() {
  SearchSpace s;
  s.add_float("lr", 1e-5, 0.1, /*log=*/true);
  s.add_int("hidden", 16, 256);
  s.add_categorical("units", {int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}});
  s.add_categorical("optimizer", {std::string("sgd"), std::string("adam")});
  return s;
}

// `edit` applied to the base space, as a new space with the same order.
template <typename Edit>
SearchSpace edited(Edit edit) {
  SearchSpace s;
  const SearchSpace base = base_space();
  for (ParamSpec spec : base.params()) {
    if (edit(spec)) s.add(spec);
  }
  return s;
}

TEST(SpaceChange, SameSpaceIsNoChange) {
  const SpaceComparison c = compare_spaces(distributions_of(base_space()), base_space());
  EXPECT_FALSE(c.conflict);
  EXPECT_TRUE(c.change.empty());
  EXPECT_EQ(c.change.summary(), "");
}

TEST(SpaceChange, CompatibleChangesAreReportedInOneLine) {
  SearchSpace next = edited([](ParamSpec& spec) {
    if (spec.name == "hidden") spec.distribution = IntDistribution{16, 512, false, 1};
    if (spec.name == "optimizer") {
      spec.distribution =
          CategoricalDistribution{{std::string("sgd"), std::string("adam"), std::string("adamw")}};
    }
    return spec.name != "lr";  // removed
  });
  next.add_categorical("activation", {std::string("relu"), std::string("tanh")});
  const SpaceComparison c = compare_spaces(distributions_of(base_space()), next);
  ASSERT_FALSE(c.conflict) << c.conflict->message();
  EXPECT_EQ(c.change.added, std::vector<std::string>{"activation"});
  EXPECT_EQ(c.change.removed, std::vector<std::string>{"lr"});
  ASSERT_EQ(c.change.changed.size(), 2u);
  EXPECT_EQ(c.change.summary(),
            "+ activation; - lr; hidden [16, 256] -> [16, 512]; optimizer [\"sgd\", \"adam\"] -> "
            "[\"sgd\", \"adam\", \"adamw\"]");
}

TEST(SpaceChange, NarrowerRangeAndAnotherStepAreCompatible) {
  const SearchSpace next = edited([](ParamSpec& spec) {
    if (spec.name == "hidden") spec.distribution = IntDistribution{32, 128, false, 16};
    if (spec.name == "lr") spec.distribution = FloatDistribution{1e-4, 1e-2, true, std::nullopt};
    return true;
  });
  const SpaceComparison c = compare_spaces(distributions_of(base_space()), next);
  ASSERT_FALSE(c.conflict);
  EXPECT_EQ(c.change.summary(),
            "lr [1e-05, 0.1, log] -> [0.0001, 0.01, log]; hidden [16, 256] -> [32, 128, step 16]");
}

TEST(SpaceChange, AnotherFixedValueIsCompatible) {
  const StoredDistributions stored = {{"seed", CategoricalDistribution{{int64_t{42}}}}};
  SearchSpace next;
  next.add_categorical("seed", {int64_t{43}});
  EXPECT_FALSE(compare_spaces(stored, next).conflict);
}

// Each refused change names the parameter, both distributions and the reason.
void expect_conflict(const SearchSpace& next, const std::string& name, const std::string& message) {
  const SpaceComparison c = compare_spaces(distributions_of(base_space()), next);
  ASSERT_TRUE(c.conflict) << "expected " << name << " to be refused";
  EXPECT_EQ(c.conflict->name, name);
  EXPECT_EQ(c.conflict->message(), message);
}

TEST(SpaceChange, AnotherKindIsRefused) {
  expect_conflict(edited([](ParamSpec& spec) {
                    if (spec.name == "hidden") spec.distribution = FloatDistribution{16, 256};
                    return true;
                  }),
                  "hidden",
                  "parameter 'hidden' was int[16, 256] and is now float[16.0, 256.0]: another "
                  "kind of distribution (int -> float)");
}

TEST(SpaceChange, ChoicesOfAnotherTypeAreRefused) {
  // The case: Optuna could no longer sample ("ValueError: '64' not in (16, 32, 64, 128)").
  expect_conflict(edited([](ParamSpec& spec) {
                    if (spec.name == "units") {
                      spec.distribution = CategoricalDistribution{
                          {std::string("16"), std::string("32"), std::string("64")}};
                    }
                    return true;
                  }),
                  "units",
                  "parameter 'units' was categorical[16, 32, 64, 128] and is now "
                  "categorical[\"16\", \"32\", \"64\"]: the choices changed type (integers -> "
                  "strings)");
}

TEST(SpaceChange, LostChoiceIsRefused) {
  expect_conflict(edited([](ParamSpec& spec) {
                    if (spec.name == "optimizer") {
                      spec.distribution = CategoricalDistribution{{std::string("adam")}};
                    }
                    return true;
                  }),
                  "optimizer",
                  "parameter 'optimizer' was categorical[\"sgd\", \"adam\"] and is now "
                  "categorical[\"adam\"]: choice \"sgd\" is gone");
}

TEST(SpaceChange, LogSwitchedIsRefused) {
  expect_conflict(edited([](ParamSpec& spec) {
                    if (spec.name == "lr") spec.distribution = FloatDistribution{1e-5, 0.1};
                    return true;
                  }),
                  "lr",
                  "parameter 'lr' was float[1e-05, 0.1, log] and is now float[1e-05, 0.1]: the "
                  "log scale is switched off");
  expect_conflict(edited([](ParamSpec& spec) {
                    if (spec.name == "hidden") spec.distribution = IntDistribution{16, 256, true};
                    return true;
                  }),
                  "hidden",
                  "parameter 'hidden' was int[16, 256] and is now int[16, 256, log]: the log "
                  "scale is switched on");
}

}  // namespace
}  // namespace tuner
