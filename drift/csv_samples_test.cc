#include "drift/csv_samples.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "trials/error.h"

namespace tuner::drift {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CsvSamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("tuner_csv_samples_test_" + std::to_string(std::random_device{}()) + ".csv");
  }
  void TearDown() override { fs::remove(path_); }
  void write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  fs::path path_;
};

TEST_F(CsvSamplesTest, AHeaderNamesTheColumnsAndTheClasses) {
  write("age, label ,income,predicted\r\n31,1,2.5e3,0\r\n\r\n45,0,-1,1\r\n");
  const Samples s = read_csv_samples(path_);
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.input_width, 2);
  EXPECT_THAT(s.input_names, ElementsAre("age", "income"));
  EXPECT_THAT(s.inputs, ElementsAre(31, 2500, 45, -1));
  EXPECT_THAT(s.labels, ElementsAre(1, 0));
  EXPECT_THAT(s.predicted, ElementsAre(0, 1));
  EXPECT_EQ(s.source.kind, "csv");
}

TEST_F(CsvSamplesTest, WithoutAHeaderEveryColumnIsAFeature) {
  write("1,2,3\n4,5,6\n7,8,9\n");
  const Samples s = read_csv_samples(path_, /*limit=*/2);
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.input_width, 3);
  EXPECT_TRUE(s.input_names.empty());
  EXPECT_TRUE(s.labels.empty());
  EXPECT_THAT(s.inputs, ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST_F(CsvSamplesTest, ErrorsNameTheLineAndColumn) {
  const struct {
    std::string text, message;
  } kCases[] = {
      {"a,b\n1,2\n3\n", ":3: 1 columns, the first row has 2"},
      {"a,b\n1,2\n3,x\n", ":3: column 2 ('b'): 'x' is not a finite number"},
      {"1,2\n3,nan\n", ":2: column 2: 'nan' is not a finite number"},
      {"label,a\n1.5,2\n", ":2: column 1 ('label'): '1.5' is not a class (an integer >= 0)"},
      {"a,b\n", ": no rows"},
  };
  for (const auto& c : kCases) {
    write(c.text);
    try {
      read_csv_samples(path_);
      ADD_FAILURE() << "accepted " << c.text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr(path_.string() + c.message)) << c.text;
    }
  }
  EXPECT_THROW(read_csv_samples(path_.string() + ".missing"), Error);
}

// A second "label" or "predicted" column was read as a feature without a name; a value past
// float32's range would be held as an infinity.
TEST_F(CsvSamplesTest, ARepeatedClassColumnOrAFeaturePastFloat32IsRefused) {
  const struct {
    std::string text, message;
  } kCases[] = {
      {"predicted,a,predicted\n1,2,3\n", ":1: columns 1 and 3 are both named 'predicted'"},
      {"a,b\n1,-1e39\n", ":2: column 2 ('b'): '-1e39' is not a finite number of float32's range"},
  };
  for (const auto& c : kCases) {
    write(c.text);
    try {
      read_csv_samples(path_);
      ADD_FAILURE() << "accepted " << c.text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr(path_.string() + c.message)) << c.text;
    }
  }
}

}  // namespace
}  // namespace tuner::drift
