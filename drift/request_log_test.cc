#include "drift/request_log.h"

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

class RequestLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tuner_request_log_test_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }

  // One request of `n` samples of 3 inputs and 2 outputs, values starting at `v`.
  static std::string request(const std::string& time, int v, int n = 1, int version = 3) {
    std::string in, out, pred;
    for (int i = 0; i < n; ++i, ++v) {
      const std::string sep = i ? "," : "";
      in += sep + "[" + std::to_string(v) + "," + std::to_string(v + 1) + "," +
            std::to_string(v + 2) + "]";
      out += sep + "[0.5," + std::to_string(-v) + ".25]";
      pred += sep + std::to_string(v % 2);
    }
    return R"({"time": ")" + time + R"(", "model": "fmnist", "version": )" +
           std::to_string(version) + R"(, "inputs": [)" + in + R"(], "outputs": [)" + out +
           R"(], "predicted": [)" + pred + "]}\n";
  }

  fs::path dir_;
};

TEST_F(RequestLogTest, FilesInTheOrderTheyWereWritten) {
  write("requests-20261202T110000-2.jsonl", "");
  write("requests-20261202T110000-10.jsonl", "");
  write("requests-20261202T105959-1.jsonl", "");
  write("notes.txt", "");
  write("requests-x.jsonl", "");
  std::vector<std::string> names;
  for (const fs::path& p : request_log_files(dir_)) names.push_back(p.filename().string());
  EXPECT_THAT(names,
              ElementsAre("requests-20261202T105959-1.jsonl", "requests-20261202T110000-2.jsonl",
                          "requests-20261202T110000-10.jsonl"));
}

TEST_F(RequestLogTest, ReadsEveryRequestOfEveryFile) {
  write("requests-20261202T110000-1.jsonl",
        request("2026-12-02T11:00:00.001Z", 0, 2) + "\n" + request("2026-12-02T11:00:01.000Z", 10));
  write("requests-20261202T110100-2.jsonl", request("2026-12-02T11:01:00.500Z", 20, 1, 4));
  const Samples s = read_request_log(dir_);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.input_width, 3);
  EXPECT_EQ(s.output_width, 2);
  EXPECT_THAT(s.inputs, ElementsAre(0, 1, 2, 1, 2, 3, 10, 11, 12, 20, 21, 22));
  EXPECT_THAT(s.outputs, ElementsAre(0.5f, 0.25f, 0.5f, -1.25f, 0.5f, -10.25f, 0.5f, -20.25f));
  EXPECT_THAT(s.predicted, ElementsAre(0, 1, 0, 0));
  EXPECT_TRUE(s.labels.empty());
  EXPECT_EQ(s.source.kind, "request log");
  EXPECT_EQ(s.source.files, 2);
  EXPECT_EQ(s.source.requests, 3);
  EXPECT_EQ(s.source.first_time, "2026-12-02T11:00:00.001Z");
  EXPECT_EQ(s.source.last_time, "2026-12-02T11:01:00.500Z");
  EXPECT_THAT(s.source.models, ElementsAre("fmnist version 3", "fmnist version 4"));
  // One file of any name, and the first samples only.
  const Samples one = read_request_log(dir_ / "requests-20261202T110000-1.jsonl", {.limit = 1});
  EXPECT_EQ(one.count, 1);
  EXPECT_THAT(one.inputs, ElementsAre(0, 1, 2));
  EXPECT_THAT(one.predicted, ElementsAre(0));
}

TEST_F(RequestLogTest, AMalformedLineNamesTheFileAndLine) {
  const fs::path f = write("requests-20261202T110000-1.jsonl",
                           request("t0", 0) +
                               "{\"inputs\": [[1, 2, 3]], \"outputs\": [[1, 2]],"
                               " \"predicted\": [0]\n" +
                               request("t2", 5));
  try {
    read_request_log(dir_);
    FAIL() << "a line that is not JSON must be an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr(f.string() + ":2: not JSON: "));
  }
  // --skip-bad: skipped and counted.
  const Samples s = read_request_log(dir_, {.skip_bad = 1});
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.source.skipped_lines, 1);
  ASSERT_FALSE(s.notes.empty());
  EXPECT_THAT(s.notes[0], HasSubstr(":2: skipped: not JSON"));
}

// Numbers a double or a float32 cannot hold: the JSON library throws its out_of_range (not a
// parse_error) for the first, and the second would be stored as an infinity.
TEST_F(RequestLogTest, NumbersPastTheirTypesRangeAreMalformedLines) {
  const struct {
    std::string line, message;
  } kCases[] = {
      {R"({"inputs": [[1, 1e999, 3]], "outputs": [[0, 1]], "predicted": [1]})",
       ":2: not JSON: number overflow parsing '1e999'"},
      {R"({"inputs": [[1, -1e39, 3]], "outputs": [[0, 1]], "predicted": [1]})",
       ":2: inputs[0][1] is -1e+39, not a finite number (of float32's range)"},
  };
  for (const auto& c : kCases) {
    const fs::path f = write("requests-20261202T110000-1.jsonl", request("t0", 0) + c.line + "\n");
    try {
      read_request_log(f);
      ADD_FAILURE() << "accepted " << c.line;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(f.string() + c.message)) << c.line;
    }
  }
}

TEST_F(RequestLogTest, RequestsMustAgreeWithTheFirst) {
  const struct {
    std::string line, message;
  } kCases[] = {
      {R"({"inputs": [[1, 2]], "outputs": [[0, 1]], "predicted": [1]})",
       ":2: inputs[0] has 2 values, the log's earlier samples 3"},
      {R"({"inputs": [[1, 2, 3]], "predicted": [1]})",
       ":2: no \"outputs\", where the log's earlier requests have them"},
      {R"({"inputs": [[1, 2, 3]], "outputs": [[0, 1, 2]], "predicted": [1]})",
       ":2: outputs[0] has 3 values, the log's earlier samples 2"},
      {R"({"inputs": [[1, "a", 3]], "outputs": [[0, 1]], "predicted": [1]})",
       ":2: inputs[0][1] is string, not a finite number"},
      {R"({"inputs": [[1, 2, 3]], "outputs": [[0, 1]], "predicted": [1.5]})",
       ":2: predicted[0] is 1.5, not a class (an integer >= 0)"},
      {R"({"inputs": [[1, 2, 3]], "outputs": [[0, 1], [1, 0]], "predicted": [1]})",
       ":2: \"outputs\" has 2 samples, \"inputs\" 1"},
      {R"({"outputs": [[0, 1]]})", ":2: no \"inputs\""},
      {R"([1, 2])", ":2: a request is a JSON object, not array"},
      {R"({"time": 5, "inputs": [[1, 2, 3]], "outputs": [[0, 1]], "predicted": [1]})",
       ":2: \"time\" must be a string (UTC ISO-8601), not number"},
  };
  for (const auto& c : kCases) {
    const fs::path f = write("requests-20261202T110000-1.jsonl", request("t0", 0) + c.line + "\n");
    try {
      read_request_log(f);
      ADD_FAILURE() << "accepted " << c.line;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(f.string() + c.message)) << c.line;
    }
  }
}

TEST_F(RequestLogTest, ALastLineBeingWrittenIsLeftOut) {
  const std::string partial = request("t1", 5);
  write("requests-20261202T110000-1.jsonl",
        request("t0", 0) + partial.substr(0, partial.size() / 2));
  const Samples s = read_request_log(dir_);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.source.skipped_lines, 0);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_THAT(s.notes[0], HasSubstr(":2: the last line has no newline and is not JSON"));
  // Complete but without the newline: read.
  const std::string whole = request("t1", 5);
  write("requests-20261202T110000-1.jsonl", request("t0", 0) + whole.substr(0, whole.size() - 1));
  EXPECT_EQ(read_request_log(dir_).count, 2);
}

TEST_F(RequestLogTest, NoLogIsAnError) {
  try {
    read_request_log(dir_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(),
                HasSubstr("no request log files (requests-<UTC yyyymmddTHHMMSS>-<seq>.jsonl"));
  }
  write("requests-20261202T110000-1.jsonl", "\n\n");
  EXPECT_THROW(read_request_log(dir_), Error);
  EXPECT_THROW(read_request_log(dir_ / "missing"), Error);
}

}  // namespace
}  // namespace tuner::drift
