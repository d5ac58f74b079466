// The server on a loopback port, spoken to over real HTTP (the tracking client's transport).
#include "serving/model_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "drift/request_log.h"
#include "serving/test_support.h"
#include "tracking/http_transport.h"

namespace tuner::serving {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Json = nlohmann::json;

class ModelServerTest : public ::testing::Test {
 protected:
  void serve(const std::string& ref, ModelServerOptions options = {}) {
    options.http.port = 0;
    options.reload_interval = 20ms;
    server_ = std::make_unique<ModelServer>(std::make_unique<ModelHolder>(registry_.ref(ref), 1),
                                            options);
  }
  std::unique_ptr<tracking::HttpTransport> client() const {
    return tracking::make_http_transport("http://127.0.0.1:" + std::to_string(server_->port()));
  }
  tracking::HttpResponse post(const std::string& body,
                              const std::string& type = "application/json") const {
    return client()->send({"POST", "/invocations", body, type});
  }
  // The logits of an {"inputs": ...} answer, flattened.
  static std::vector<float> logits(const tracking::HttpResponse& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<float> out;
    const Json answer = Json::parse(r.body);
    for (const Json& row : answer["predictions"]["logits"]) {
      for (const Json& v : row) out.push_back(v.get<float>());
    }
    return out;
  }

  testing::TinyRegistry registry_{2};
  std::unique_ptr<ModelServer> server_;
};

TEST_F(ModelServerTest, AnswersEveryPayloadFormWithTheModelsOutputs) {
  serve("tiny@champion");
  const std::vector<float> x = {1, 2, 3, 4, -1, 0.5, 0, 2};
  const std::vector<float> want = registry_.expected(1, x);
  auto near = [&](const std::vector<float>& got) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f);
  };
  near(logits(post(R"({"inputs": [[1, 2, 3, 4], [-1, 0.5, 0, 2]]})")));
  near(logits(post(R"({"instances": [{"input": [1, 2, 3, 4]}, {"input": [-1, 0.5, 0, 2]}]})")));
  for (
      const auto& [body, type] : std::vector<std::pair<std::string, std::string>>{
          {R"({"dataframe_split": {"columns": ["a","b","c","d"], "data": [[1,2,3,4],[-1,0.5,0,2]]}})",
           "application/json"},
          {R"({"dataframe_records": [{"a":1,"b":2,"c":3,"d":4}, {"a":-1,"b":0.5,"c":0,"d":2}]})",
           "application/json"},
          {"a,b,c,d\n1,2,3,4\n-1,0.5,0,2\n", "text/csv"}}) {
    const tracking::HttpResponse r = post(body, type);
    ASSERT_EQ(r.status, 200) << r.body;
    std::vector<float> got;
    const Json answer = Json::parse(r.body);
    for (const Json& record : answer["predictions"]) {
      for (const Json& v : record["logits"]) got.push_back(v.get<float>());
    }
    near(got);
  }
}

// A model trained on a table takes a data frame's raw values by column name, encoded as
// `tuner predict` encodes a table's rows, and answers its class labels and probabilities.
TEST_F(ModelServerTest, ATableModelTakesColumnsByNameAndAnswersLabels) {
  registry_.add_table_model();
  serve("table/1");
  // a=2 color=red; a=-1 color=blue; a missing (1.5) color missing; an unseen category.
  const std::vector<float> encoded = {2, 0, 1, 0, -1, 1, 0, 0, 1.5f, 0, 0, 1, 3, 0, 0, 0};
  const std::vector<float> want = registry_.expected(1, encoded, "table");
  auto check = [&](const tracking::HttpResponse& r) {
    ASSERT_EQ(r.status, 200) << r.body;
    const Json answer = Json::parse(r.body);
    ASSERT_EQ(answer["predictions"].size(), 4u) << r.body;
    for (size_t row = 0; row < 4; ++row) {
      const Json& record = answer["predictions"][row];
      ASSERT_EQ(record["logits"].size(), 3u);
      ASSERT_EQ(record["probabilities"].size(), 3u);
      size_t best = 0;
      double sum = 0;
      for (size_t c = 0; c < 3; ++c) {
        EXPECT_NEAR(record["logits"][c].get<float>(), want[row * 3 + c], 1e-5f);
        if (want[row * 3 + c] > want[row * 3 + best]) best = c;
        sum += record["probabilities"][c].get<double>();
      }
      EXPECT_NEAR(sum, 1.0, 1e-5);
      EXPECT_EQ(record["label"], testing::kTableLabels[best]) << r.body;
    }
  };
  // Columns in another order, an extra column, numbers as strings, null and "NA" missing.
  check(post(R"({"dataframe_split": {"columns": ["id", "color", "a"],
      "data": [[1, "red", 2], [2, "blue", "-1"], [3, null, "NA"], [4, "green", 3.0]]}})"));
  check(post(R"({"dataframe_records": [{"color": "red", "a": 2, "id": 1},
      {"a": "-1", "color": "blue"}, {"a": null, "color": ""}, {"color": "green", "a": 3}]})"));
  // The encoded features as a tensor, as before: logits only.
  EXPECT_EQ(
      logits(post(R"({"inputs": [[2, 0, 1, 0], [-1, 1, 0, 0], [1.5, 0, 0, 1], [3, 0, 0, 0]]})"))
          .size(),
      12u);

  auto refused = [&](const std::string& body) {
    const tracking::HttpResponse r = post(body);
    EXPECT_EQ(r.status, 400) << r.body;
    return Json::parse(r.body)["message"].get<std::string>();
  };
  EXPECT_THAT(refused(R"({"dataframe_split": {"columns": ["a"], "data": [[1]]}})"),
              HasSubstr("no feature column \"color\""));
  EXPECT_THAT(refused(R"({"dataframe_records": [{"a": 1, "color": "red"}, {"a": 2}]})"),
              HasSubstr("dataframe_records[1]: no feature column \"color\""));
  EXPECT_THAT(refused(R"({"dataframe_records": [{"a": 1, "color": ["red"]}]})"),
              HasSubstr("dataframe_records[0].color: an array, expected a string, a number"));
  EXPECT_THAT(
      refused(R"({"dataframe_split": {"columns": ["color", "a"], "data": [["red", true]]}})"),
      HasSubstr("dataframe_split.data[0].a: a boolean"));
  EXPECT_THAT(
      refused(R"({"dataframe_split": {"columns": ["color", "a"], "data": [["red", "x"]]}})"),
      HasSubstr("dataframe_split.data[0]: column \"a\" is numeric, \"x\" is not a number"));
}

TEST_F(ModelServerTest, ABadPayloadIs400NamingTheFieldAndShape) {
  serve("tiny/1");
  const tracking::HttpResponse r = post(R"({"inputs": [[1, 2, 3]]})");
  EXPECT_EQ(r.status, 400);
  const Json error = Json::parse(r.body);
  EXPECT_EQ(error["error_code"], "BAD_REQUEST");
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("inputs[0]"));
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("[4]"));
  EXPECT_EQ(post("1,2,3,4", "application/x-www-form-urlencoded").status, 415);
  // The server goes on.
  EXPECT_EQ(post(R"({"inputs": [[1, 2, 3, 4]]})").status, 200);
}

TEST_F(ModelServerTest, HealthVersionMetricsAndUnknownPaths) {
  serve("tiny/2");
  auto c = client();
  EXPECT_EQ(c->send({"GET", "/ping", "", ""}).status, 200);
  EXPECT_EQ(c->send({"GET", "/health", "", ""}).status, 200);
  EXPECT_THAT(c->send({"GET", "/version", "", ""}).body, HasSubstr("."));
  EXPECT_EQ(c->send({"GET", "/nowhere", "", ""}).status, 404);
  EXPECT_EQ(c->send({"GET", "/invocations", "", ""}).status, 405);
  EXPECT_EQ(
      c->send({"POST", "/invocations", R"({"inputs": [[1, 2, 3, 4]]})", "application/json"}).status,
      200);
  const std::string metrics = c->send({"GET", "/metrics", "", ""}).body;
  EXPECT_THAT(metrics,
              HasSubstr("tuner_serving_requests_total{path=\"/invocations\",status=\"200\"} 1\n"));
  EXPECT_THAT(metrics,
              HasSubstr("tuner_serving_requests_total{path=\"other\",status=\"404\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("tuner_serving_model_version{model=\"tiny\"} 2\n"));
  EXPECT_THAT(metrics, HasSubstr("tuner_serving_batch_samples_count 1\n"));
}

TEST_F(ModelServerTest, AnAliasMovedUnderLoadIsServedWithoutAFailedRequest) {
  serve("tiny@champion");
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> v1 = registry_.expected(1, x), v2 = registry_.expected(2, x);
  auto is = [](const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::abs(got[i] - want[i]) > 1e-5f) return false;
    }
    return true;
  };
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0}, failed{0}, by_v2{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      auto c = client();
      bool seen_v2 = false;
      while (!stop) {
        tracking::HttpResponse r;
        try {
          r = c->send(
              {"POST", "/invocations", R"({"inputs": [[1, 2, 3, 4]]})", "application/json"});
        } catch (const std::exception&) {
          ++failed;
          continue;
        }
        const std::vector<float> got = r.status == 200 ? logits(r) : std::vector<float>{};
        // Each answer is one version's, and once a client sees version 2 it never sees 1 again.
        if (r.status != 200 || !(is(got, v2) || (!seen_v2 && is(got, v1)))) ++failed;
        if (is(got, v2)) {
          seen_v2 = true;
          ++by_v2;
        }
        ++answered;
      }
    });
  }
  while (answered < 50) std::this_thread::sleep_for(1ms);
  registry_.move_champion(2);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (by_v2 < 50 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GE(by_v2.load(), 50) << "version 2 was not served within 5 s of the alias moving";
  EXPECT_EQ(server_->model()->version, 2);
  EXPECT_THAT(server_->metrics().prometheus_text(),
              HasSubstr("tuner_serving_model_reloads_total{result=\"loaded\"} 1\n"));
}

TEST_F(ModelServerTest, ConcurrentRequestsAreBatchedAndLogged) {
  ModelServerOptions options;
  options.batching.max_wait = 20ms;
  options.log = RequestLogOptions{};
  const std::filesystem::path log_dir = registry_.dir().parent_path() / "log";
  options.log->dir = log_dir;
  serve("tiny/1", options);
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      const std::string body = "{\"inputs\": [[" + std::to_string(t) + ", 1, 2, 3]]}";
      if (post(body).status == 200) ++ok;
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok.load(), 8);
  const std::string metrics = server_->metrics().prometheus_text();
  EXPECT_THAT(metrics, HasSubstr("tuner_serving_batched_requests_total 8\n"));
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr("tuner_serving_batches_total 8\n")));
  server_->stop();  // writes the log
  const drift::Samples logged = drift::read_request_log(log_dir);
  EXPECT_EQ(logged.count, 8);
  EXPECT_EQ(logged.output_width, 3);
}

TEST_F(ModelServerTest, StopAnswersTheRequestsInFlight) {
  ModelServerOptions options;
  options.batching.max_wait = 300ms;  // a lone request waits in the batcher
  serve("tiny/1", options);
  std::atomic<int> status{0};
  std::thread request([&] { status = post(R"({"inputs": [[1, 2, 3, 4]]})").status; });
  // Until the request is read (it then waits in the batcher).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (server_->in_flight() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(server_->in_flight(), 1);
  server_->stop(5s);
  request.join();
  EXPECT_EQ(status.load(), 200);
  EXPECT_THROW(post(R"({"inputs": [[1, 2, 3, 4]]})"), std::exception);  // no longer listening
}

// Sends `bytes` on a connection of its own and returns what the server answers before closing
// (nothing, without waiting, when `leave`: the client goes away).
std::string raw_exchange(uint16_t port, const std::string& bytes, bool leave = false) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  asio::write(socket, asio::buffer(bytes));
  std::string answer;
  if (leave) return answer;
  boost::system::error_code ec;
  char buffer[4096];
  for (size_t n; (n = socket.read_some(asio::buffer(buffer), ec)) > 0 || !ec;)
    answer.append(buffer, n);
  return answer;
}

TEST_F(ModelServerTest, GarbageAndOversizedBodiesAreRefusedAndTheServerGoesOn) {
  ModelServerOptions options;
  options.http.max_body_bytes = 1000;
  serve("tiny/1", options);
  EXPECT_THAT(raw_exchange(server_->port(), "GARBAGE \x01\x02 NOT HTTP\r\n\r\n"),
              HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(raw_exchange(server_->port(),
                           "POST /invocations HTTP/1.1\r\nHost: x\r\n"
                           "Content-Type: application/json\r\n"
                           "Content-Length: 5000\r\n\r\n" +
                               std::string(5000, '[')),
              HasSubstr("HTTP/1.1 413"));
  // A client that leaves in the middle of its request.
  raw_exchange(server_->port(), "POST /invocations HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"in",
               /*leave=*/true);
  EXPECT_EQ(post(R"({"inputs": [[1, 2, 3, 4]]})").status, 200);
}

}  // namespace
}  // namespace tuner::serving
