#include "registry/table_input.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "registry/test_util.h"
#include "trials/error.h"

namespace tuner::registry {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ScratchDir;

// Two numeric columns and a categorical one with a missing slot, missing values filled.
TableEncoding encoding(bool missing_mean = true) {
  TableEncoding e;
  e.columns = {TableColumn{.name = "a", .fill = 1.5f},
               TableColumn{.name = "color",
                           .categorical = true,
                           .categories = {"blue", "red"},
                           .missing_slot = true},
               TableColumn{.name = "b", .fill = -2.0f}};
  e.features = {"a", "color=blue", "color=red", "color=(missing)", "b"};
  e.label = "y";
  e.missing_mean = missing_mean;
  return e;
}

class TableInputTest : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path file = scratch_.path() / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
  std::string error(const fs::path& file, const TableEncoding& e, ErrorCode code) {
    try {
      read_table_input(file, e);
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), code) << err.what();
      return err.what();
    }
    return "no error";
  }
  ScratchDir scratch_;
};

TEST_F(TableInputTest, EncodesColumnsByNameAsTheLoaderDid) {
  // Columns in another order, an extra one, quotes, a missing value of each kind, an unknown
  // category (no slot), the label column.
  const fs::path file = write("in.csv",
                              "b,extra,y,color,a\n"
                              "3,x,setosa,red,+4\n"
                              "NA,y,\"virginica\",\"blue\",0.5\n"
                              "\n"
                              "1e1,z,3,,\n"
                              "2,w,setosa,green,7\n");
  const TableInput in = read_table_input(file, encoding());
  ASSERT_EQ(in.count, 4);
  EXPECT_EQ(in.features, (std::vector<float>{4,    0, 1, 0, 3,   //
                                             0.5f, 1, 0, 0, -2,  //
                                             1.5f, 0, 0, 1, 10,  //
                                             7,    0, 0, 0, 2}));
  EXPECT_EQ(in.labels, (std::vector<std::string>{"setosa", "virginica", "3", "setosa"}));
  EXPECT_EQ(in.lines, (std::vector<int64_t>{2, 3, 5, 6}));
  EXPECT_EQ(read_table_input(file, encoding(), 2).count, 2);
  // A TSV by its extension; no label column: no labels.
  const TableInput tsv = read_table_input(write("in.tsv", "color\ta\tb\nred\t1\t2\n"), encoding());
  EXPECT_EQ(tsv.features, (std::vector<float>{1, 0, 1, 0, 2}));
  EXPECT_TRUE(tsv.labels.empty());
}

TEST_F(TableInputTest, ClassIndexMatchesTextOrTheSameInteger) {
  const std::vector<std::string> labels = {"-1", "3", "10"};
  EXPECT_EQ(class_index(labels, "3"), 1);
  EXPECT_EQ(class_index(labels, "+3"), 1);
  EXPECT_EQ(class_index(labels, "10"), 2);
  EXPECT_EQ(class_index(labels, "4"), -1);
  EXPECT_EQ(class_index({"cat", "dog"}, "dog"), 1);
  EXPECT_EQ(class_index({"cat", "dog"}, "Dog"), -1);
}

TEST_F(TableInputTest, RefusalsNameTheFileLineAndColumn) {
  const std::string lacking =
      error(write("lacking.csv", "a,y\n1,setosa\n"), encoding(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(lacking, HasSubstr("lacking.csv:1: the header lacks the feature columns \"color\", "
                                 "\"b\" of the model (it takes the columns a, color, b by name"));
  EXPECT_THAT(
      error(write("fields.csv", "a,color,b\n1,red\n"), encoding(), ErrorCode::kInvalidArgument),
      HasSubstr("fields.csv:2: 2 fields, but the header has 3"));
  EXPECT_THAT(error(write("text.csv", "a,color,b\n1,red,2\nabc,red,2\n"), encoding(),
                    ErrorCode::kInvalidArgument),
              HasSubstr("text.csv:3: column \"a\" is numeric, \"abc\" is not a number"));
  EXPECT_THAT(error(write("missing.csv", "a,color,b\n1,,2\n"), encoding(/*missing_mean=*/false),
                    ErrorCode::kInvalidArgument),
              HasSubstr("missing.csv:2: column \"color\" has no value (\"\"), and the model was "
                        "trained without data.missing \"mean\""));
  EXPECT_THAT(error(write("empty.csv", "a,color,b\n"), encoding(), ErrorCode::kInvalidArgument),
              HasSubstr("empty.csv: no rows under the header"));
  EXPECT_THAT(error(scratch_.path() / "none.csv", encoding(), ErrorCode::kNotFound),
              HasSubstr("none.csv: does not exist"));
}

}  // namespace
}  // namespace tuner::registry
