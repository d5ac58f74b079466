#include "wire/protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace tuner {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Message round_trip(const Message& m) { return decode(encode(m)); }

std::string header(uint16_t version, uint16_t type) {
  std::string h("TUNR", 4);
  h.push_back(static_cast<char>(version >> 8));
  h.push_back(static_cast<char>(version & 0xff));
  h.push_back(static_cast<char>(type >> 8));
  h.push_back(static_cast<char>(type & 0xff));
  return h;
}

std::vector<std::string> frames_of(MessageType type, const std::string& body) {
  return {header(kProtocolVersion, static_cast<uint16_t>(type)), body};
}

// The ProtocolError message decode() throws for `frames`.
std::string decode_error(const std::vector<std::string>& frames) {
  try {
    decode(frames);
  } catch (const ProtocolError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "decoded without an error";
  return "";
}

std::string body_error(MessageType type, const std::string& body) {
  return decode_error(frames_of(type, body));
}

// One valid message of every type, in MessageType order.
std::vector<Message> samples() {
  return {
      HelloMessage{.executor_id = "exec-1",
                   .hostname = "node7",
                   .pid = 4242,
                   .resources = {.cpu_slots = 16,
                                 .gpus = {{0, "NVIDIA H200", uint64_t{141} << 30},
                                          {1, "NVIDIA H200", uint64_t{141} << 30}}},
                   .leases = {{.lease_id = 99, .study_name = "s", .trial_id = 7, .gpus = {1}}}},
      ReadyMessage{.free_slots = 3, .free_gpus = {1}},
      TrialMessage{.lease_id = 17,
                   .study_name = "étude ✓",
                   .trial_id = 123,
                   .number = 9,
                   .attempt = 2,
                   .params = {{"layers", int64_t{3}},
                              {"lr", 0.001},
                              {"one", 1.0},
                              {"opt", std::string("adam")},
                              {"bn", false}},
                   .job_json = R"({"kind": "command", "argv": ["python3", "t.py"]})",
                   .heartbeat_interval_ms = 2000,
                   .gpus = {0, 1},
                   .checkpoint_path = "/ckpt/trial-123",
                   .start_checkpoint_path = "/ckpt/trial-120",
                   .pause_at_step = 6},
      ReportMessage{.lease_id = 17, .step = 3, .metrics = {{"val_loss", 0.41}, {"acc", 0.9}}},
      DecisionMessage{.lease_id = 17, .decision = JobDecision::kStop},
      ResultMessage{.lease_id = 17,
                    .metrics = {{"val_loss", 0.25}},
                    .values = {0.25, 12.0},
                    .paused_at_step = 6},
      FailMessage{.lease_id = 17,
                  .reason = "exited with code 3",
                  .exit_code = 3,
                  .log_tail = "Traceback (most recent call last):\n  ...\nValueError: boom\n"},
      AckMessage{.lease_id = 17, .accepted = false, .reason = "stale lease: trial re-issued"},
      HeartbeatMessage{.lease_ids = {17, 18, std::numeric_limits<uint64_t>::max()}},
      ErrorMessage{.message = "unknown message type 99"},
      ByeMessage{.preempted = {{.lease_id = 17, .checkpoint = true}, {.lease_id = 18}}},
      StoreSetMessage{.lease_id = 17, .key = "0", .value = std::string("\x00\xff\x7f a", 5)},
      StoreKeysMessage{.lease_id = 18, .entries = {{"0", "addr-0"}, {"nccl_id", ""}}},
      FileChunkMessage{.lease_id = 17,
                       .kind = TrialFileKind::kArtifact,
                       .path = "checkpoints/model.ckpt",
                       .size = 10,
                       .offset = 4,
                       .data = std::string("\x00\xff\x7f ab", 6)},
      FileAckMessage{.lease_id = 17,
                     .kind = TrialFileKind::kArtifact,
                     .path = "checkpoints/model.ckpt",
                     .offset = 4,
                     .accepted = false,
                     .reason = "No space left on device"},
      FilesLeftMessage{
          .lease_id = 17,
          .hostname = "node7",
          .limit_bytes = uint64_t{1} << 30,
          .files = {{.path = "/tmp/f/s/trial-9/model.ckpt", .size = uint64_t{3} << 30}}},
      CheckpointGetMessage{.lease_id = 17,
                           .of = CheckpointOf::kOwn,
                           .file = "resume.ckpt.history.json",
                           .offset = 8},
      CheckpointDataMessage{.lease_id = 17,
                            .of = CheckpointOf::kStart,
                            .file = "resume.ckpt",
                            .offset = 4,
                            .size = 10,
                            .data = std::string("\x00\xff\x7f ab", 6)},
  };
}

TEST(Protocol, EveryTypeRoundTrips) {
  auto messages = samples();
  ASSERT_EQ(messages.size(), 18u);
  for (size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    EXPECT_EQ(static_cast<size_t>(message_type(m)), i + 1);
    auto frames = encode(m);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].size(), kProtocolHeaderBytes);
    EXPECT_EQ(decode(frames), m) << to_string(message_type(m)) << ": " << frames[1];
  }
}

// Optional members: absent when unset, so older peers read the same bodies.
TEST(Protocol, OptionalMembersRoundTripAndStayOutWhenUnset) {
  const ResultMessage result{.lease_id = 17,
                             .metrics = {{"params", 12345.0}, {"val_loss", 0.25}},
                             .values = {0.25},
                             .integer_metrics = {"params"}};
  EXPECT_EQ(decode(encode(result)), Message(result));
  const ErrorMessage refused{.message = "executor id 'a' is in use", .refused = true};
  EXPECT_EQ(decode(encode(refused)), Message(refused));
  const ErrorMessage say_hello{.message = "unknown executor", .say_hello = true};
  EXPECT_EQ(decode(encode(say_hello)), Message(say_hello));
  EXPECT_EQ(encode(ErrorMessage{.message = "m"})[1], R"({"message":"m"})");
  EXPECT_EQ(encode(ResultMessage{.lease_id = 1})[1], R"({"lease_id":1,"metrics":{},"values":[]})");
  const ResultMessage measured{
      .lease_id = 17, .metrics = {{"val_loss", 0.25}}, .gpu_memory_peak_bytes = uint64_t{17} << 30};
  EXPECT_EQ(decode(encode(measured)), Message(measured));
  const FailMessage none_held{.lease_id = 17, .reason = "killed", .gpu_memory_peak_bytes = 0};
  EXPECT_EQ(decode(encode(none_held)), Message(none_held));
  EXPECT_THAT(encode(FailMessage{.lease_id = 1})[1], Not(HasSubstr("gpu_memory_peak_bytes")));
}

TEST(Protocol, HeaderCarriesMagicVersionAndType) {
  auto frames = encode(ReportMessage{.lease_id = 1});
  EXPECT_EQ(frames[0], header(kProtocolVersion, 4));
  EXPECT_EQ(frames[1], R"({"lease_id":1,"step":0,"metrics":{}})");
}

TEST(Protocol, TypeNames) {
  EXPECT_EQ(to_string(MessageType::kHello), "HELLO");
  EXPECT_EQ(to_string(MessageType::kHeartbeat), "HEARTBEAT");
  EXPECT_EQ(to_string(MessageType::kBye), "BYE");
  EXPECT_EQ(to_string(static_cast<MessageType>(99)), "UNKNOWN");
  EXPECT_EQ(to_string(JobDecision::kPause), "pause");
  EXPECT_EQ(parse_job_decision("continue"), JobDecision::kContinue);
  EXPECT_EQ(parse_job_decision("prune"), std::nullopt);
}

TEST(Protocol, NanAndInfinityMetricsSurvive) {
  auto frames = encode(ReportMessage{
      .lease_id = 5, .step = 1, .metrics = {{"loss", kNan}, {"up", kInf}, {"down", -kInf}}});
  EXPECT_THAT(frames[1], HasSubstr(R"("loss":"nan")"));
  auto back = std::get<ReportMessage>(decode(frames));
  EXPECT_TRUE(std::isnan(back.metrics.at("loss")));
  EXPECT_EQ(back.metrics.at("up"), kInf);
  EXPECT_EQ(back.metrics.at("down"), -kInf);

  auto result = std::get<ResultMessage>(
      round_trip(ResultMessage{.metrics = {{"m", kNan}}, .values = {kNan, -kInf}}));
  EXPECT_TRUE(std::isnan(result.metrics.at("m")));
  EXPECT_TRUE(std::isnan(result.values.at(0)));
  EXPECT_EQ(result.values.at(1), -kInf);
}

TEST(Protocol, EmptyMapsAndOptionalsRoundTrip) {
  EXPECT_EQ(round_trip(TrialMessage{}), Message(TrialMessage{}));
  EXPECT_EQ(round_trip(ResultMessage{}), Message(ResultMessage{}));
  EXPECT_EQ(round_trip(FailMessage{.reason = "engine threw"}),
            Message(FailMessage{.reason = "engine threw"}));
  EXPECT_EQ(round_trip(HelloMessage{}), Message(HelloMessage{}));
  EXPECT_EQ(round_trip(HeartbeatMessage{}), Message(HeartbeatMessage{}));
}

TEST(Protocol, ParamsKeepIntVersusFloatAndExactFloats) {
  TrialMessage t{.params = {{"i", int64_t{1}}, {"f", 1.0}, {"x", 0.1 + 0.2}, {"tiny", 5e-324}}};
  auto back = std::get<TrialMessage>(round_trip(t));
  EXPECT_TRUE(std::holds_alternative<int64_t>(back.params.at("i")));
  EXPECT_TRUE(std::holds_alternative<double>(back.params.at("f")));
  EXPECT_EQ(std::get<double>(back.params.at("x")), 0.1 + 0.2);
  EXPECT_EQ(std::get<double>(back.params.at("tiny")), 5e-324);
}

TEST(Protocol, UnknownBodyMembersAreIgnored) {
  auto m = decode(frames_of(MessageType::kAck,
                            R"({"lease_id":3,"accepted":true,"reason":"","future":{"x":[1]}})"));
  EXPECT_EQ(std::get<AckMessage>(m), (AckMessage{.lease_id = 3, .accepted = true}));
}

TEST(Protocol, NullOptionalsDecodeAsAbsent) {
  auto m = std::get<FailMessage>(decode(frames_of(
      MessageType::kFail, R"({"lease_id":3,"reason":"r","exit_code":null,"log_tail":""})")));
  EXPECT_EQ(m.exit_code, std::nullopt);
}

TEST(Protocol, EncodeRefusesNonFiniteParamsAndOversizedMessages) {
  try {
    encode(TrialMessage{.params = {{"lr", kNan}}});
    FAIL();
  } catch (const ProtocolError& e) {
    EXPECT_THAT(e.what(), HasSubstr("TRIAL.params: parameter 'lr'"));
  }
  try {
    encode(FailMessage{.log_tail = std::string(kMaxMessageBytes, 'x')});
    FAIL();
  } catch (const ProtocolError& e) {
    EXPECT_THAT(e.what(), HasSubstr("FAIL: encoded message of"));
    EXPECT_THAT(e.what(), HasSubstr("exceeds the limit of 16777216 bytes"));
  }
}

TEST(Protocol, FrameErrors) {
  EXPECT_EQ(decode_error({}), "expected 2 frames (header, body), got 0");
  EXPECT_EQ(decode_error({header(1, 11)}), "expected 2 frames (header, body), got 1");
  EXPECT_EQ(decode_error({header(1, 11), "{}", "extra"}),
            "expected 2 frames (header, body), got 3");
  EXPECT_EQ(decode_error({"TUN", "{}"}), "header frame: expected 8 bytes, got 3");
  EXPECT_EQ(decode_error({"XUNR\0\1\0\1", "{}"}), "header frame: expected 8 bytes, got 4");
  EXPECT_EQ(decode_error({std::string("XUNR\0\1\0\1", 8), "{}"}),
            "header frame: bad magic (not a tuner message)");
  EXPECT_EQ(decode_error({header(2, 11), "{}"}),
            "protocol version 2 is not supported (this build speaks version 1)");
  EXPECT_EQ(decode_error({header(1, 99), "{}"}), "unknown message type 99");
  EXPECT_EQ(decode_error({header(1, 0), "{}"}), "unknown message type 0");
  EXPECT_EQ(decode_error({header(1, 11), std::string(kMaxMessageBytes, ' ')}),
            "message exceeds the limit of 16777216 bytes");
}

TEST(Protocol, BodyErrors) {
  EXPECT_EQ(body_error(MessageType::kBye, ""), "BYE body: not valid JSON (error at byte 1)");
  EXPECT_EQ(body_error(MessageType::kBye, "{\"a\":"), "BYE body: not valid JSON (error at byte 6)");
  EXPECT_EQ(body_error(MessageType::kBye, "[]"), "BYE body: expected a JSON object, got array");
  EXPECT_THAT(body_error(MessageType::kBye, "{\"s\":\"\xff\"}"), HasSubstr("not valid JSON"));
  EXPECT_EQ(body_error(MessageType::kBye, std::string(40, '[') + std::string(40, ']')),
            "BYE body: nested deeper than 32");
}

TEST(Protocol, FieldErrorsNameTheField) {
  using T = MessageType;
  EXPECT_EQ(body_error(T::kReport, R"({"lease_id":1,"step":2,"metrics":{"loss":"high"}})"),
            R"(REPORT.metrics.loss: expected a number (or "nan", "inf", "-inf"))");
  EXPECT_EQ(body_error(T::kReport, R"({"lease_id":1,"step":2,"metrics":{"loss":null}})"),
            R"(REPORT.metrics.loss: expected a number (or "nan", "inf", "-inf"))");
  EXPECT_EQ(body_error(T::kReport, R"({"lease_id":1,"metrics":{}})"), "REPORT.step: missing");
  EXPECT_EQ(body_error(T::kReport, R"({"lease_id":1,"step":2.5,"metrics":{}})"),
            "REPORT.step: expected an integer, got number");
  EXPECT_EQ(body_error(T::kReport, R"({"lease_id":1,"step":2,"metrics":[]})"),
            "REPORT.metrics: expected an object, got array");
  EXPECT_EQ(body_error(T::kReport, R"({"lease_id":-1,"step":2,"metrics":{}})"),
            "REPORT.lease_id: integer out of range [0, 18446744073709551615]");
  EXPECT_EQ(body_error(T::kReady, R"({"free_slots":4294967296,"free_gpus":[]})"),
            "READY.free_slots: integer out of range [-2147483648, 2147483647]");
  EXPECT_EQ(body_error(T::kReady, R"({"free_slots":1,"free_gpus":[0,"1"]})"),
            "READY.free_gpus[1]: expected an integer, got string");
  EXPECT_EQ(
      body_error(T::kHello, R"({"executor_id":"e","hostname":"h","pid":1,)"
                            R"("resources":{"cpu_slots":1,"gpus":[{"index":0,"name":"g"}]}})"),
      "HELLO.resources.gpus[0].memory_bytes: missing");
  EXPECT_EQ(
      body_error(T::kHello, R"({"executor_id":"e","hostname":"h","pid":1,)"
                            R"("resources":{"cpu_slots":1,"gpus":[]},"leases":[{"lease_id":1}]})"),
      "HELLO.leases[0].study_name: missing");
  EXPECT_EQ(body_error(T::kHello, R"({"executor_id":7})"),
            "HELLO.executor_id: expected a string, got number");
  EXPECT_EQ(body_error(T::kDecision, R"({"lease_id":1,"decision":"prune"})"),
            R"(DECISION.decision: expected "continue", "stop" or "pause", got "prune")");
  EXPECT_EQ(body_error(T::kAck, R"({"lease_id":1,"accepted":"yes","reason":""})"),
            "ACK.accepted: expected a boolean, got string");
  EXPECT_EQ(body_error(T::kHeartbeat, R"({"lease_ids":{}})"),
            "HEARTBEAT.lease_ids: expected an array, got object");
  EXPECT_EQ(body_error(T::kResult, R"({"lease_id":1,"metrics":{},"values":[1,true]})"),
            R"(RESULT.values[1]: expected a number (or "nan", "inf", "-inf"))");
  EXPECT_EQ(body_error(T::kFail, R"({"lease_id":1,"reason":"r","exit_code":"3","log_tail":""})"),
            "FAIL.exit_code: expected an integer, got string");
  EXPECT_EQ(body_error(T::kError, "{}"), "ERROR.message: missing");
  EXPECT_THAT(body_error(T::kTrial, R"({"lease_id":1,"study_name":"s","trial_id":1,"number":0,)"
                                    R"("attempt":0,"params":{"lr":[0.1]}})"),
              HasSubstr("TRIAL.params.lr: expected a boolean, integer, float or string"));
  EXPECT_EQ(body_error(T::kTrial, R"({"lease_id":1,"study_name":"s","trial_id":1,"number":0,)"
                                  R"("attempt":0,"params":{},"job_json":"{}",)"
                                  R"("heartbeat_interval_ms":1,"gpus":[],"checkpoint_path":5})"),
            "TRIAL.checkpoint_path: expected a string, got number");
}

// decode() on thousands of seeded random mutations of valid messages: it returns or throws
// ProtocolError, never anything else (the fuzz target, fuzz/protocol_fuzz.cc, goes further).
TEST(Protocol, RandomMutationsOnlyReturnOrThrowProtocolError) {
  std::mt19937_64 rng(20240601);
  auto messages = samples();
  messages.push_back(ReportMessage{.lease_id = 1, .metrics = {{"nan", kNan}, {"inf", kInf}}});
  int decoded = 0, refused = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    auto frames = encode(messages[rng() % messages.size()]);
    int mutations = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < mutations; ++k) {
      std::string& frame = frames[rng() % frames.size()];
      switch (rng() % 7) {
        case 0:  // truncate
          frame.resize(frame.empty() ? 0 : rng() % frame.size());
          break;
        case 1:  // flip a byte
          if (!frame.empty()) frame[rng() % frame.size()] ^= static_cast<char>(1 + rng() % 255);
          break;
        case 2:  // overwrite a byte with a JSON-significant one
          if (!frame.empty()) frame[rng() % frame.size()] = "{}[]\",:-.0e\\n"[rng() % 13];
          break;
        case 3:  // insert a byte
          frame.insert(frame.begin() + static_cast<long>(rng() % (frame.size() + 1)),
                       static_cast<char>(rng()));
          break;
        case 4:  // an extra frame
          frames.push_back(frames[rng() % frames.size()]);
          break;
        case 5:  // drop a frame
          if (!frames.empty())
            frames.erase(frames.begin() + static_cast<long>(rng() % frames.size()));
          if (frames.empty()) frames.emplace_back();
          break;
        case 6:  // duplicate a slice
          if (!frame.empty()) {
            size_t at = rng() % frame.size();
            frame.insert(at, frame.substr(at, rng() % 16));
          }
          break;
      }
    }
    try {
      decode(frames);
      ++decoded;
    } catch (const ProtocolError&) {
      ++refused;
    } catch (const std::exception& e) {
      FAIL() << "iteration " << iteration << ": decode threw something else: " << e.what();
    }
  }
  EXPECT_GT(decoded, 100);  // some mutations keep a valid message (e.g. a flipped string byte)
  EXPECT_GT(refused, 10000);
}

TEST(Protocol, StoreValuesTravelAsHex) {
  auto frames =
      encode(StoreSetMessage{.lease_id = 2, .key = "k", .value = std::string("\x01\xab", 2)});
  EXPECT_EQ(frames[0], header(kProtocolVersion, 12));
  EXPECT_EQ(frames[1], R"({"lease_id":2,"key":"k","value":"01ab"})");
  EXPECT_EQ(
      std::get<StoreSetMessage>(
          decode(frames_of(MessageType::kStoreSet, R"({"lease_id":2,"key":"k","value":"01AB"})")))
          .value,
      std::string("\x01\xab", 2));
  EXPECT_EQ(to_string(MessageType::kStoreSet), "STORE_SET");
  EXPECT_EQ(to_string(MessageType::kStoreKeys), "STORE_KEYS");
}

TEST(Protocol, StoreMessagesRefuseBadKeysAndValues) {
  using T = MessageType;
  EXPECT_EQ(body_error(T::kStoreSet, R"({"lease_id":1,"key":"k","value":"abc"})"),
            "STORE_SET.value: expected hex digits in pairs, got 3");
  EXPECT_EQ(body_error(T::kStoreSet, R"({"lease_id":1,"key":"k","value":"zz"})"),
            "STORE_SET.value: expected hex digits, got 'zz'");
  EXPECT_EQ(body_error(T::kStoreSet, R"({"lease_id":1,"key":"","value":""})"),
            "STORE_SET: key of 0 bytes: expected 1 to 256");
  EXPECT_EQ(body_error(T::kStoreSet, R"({"lease_id":1,"value":""})"), "STORE_SET.key: missing");
  EXPECT_EQ(body_error(T::kStoreKeys, R"({"lease_id":1,"entries":{"a":7}})"),
            "STORE_KEYS.entries.a: expected a string, got number");
  EXPECT_EQ(body_error(T::kStoreKeys, R"({"lease_id":1,"entries":[]})"),
            "STORE_KEYS.entries: expected an object, got array");
  const std::string big(2 * (kMaxStoreValueBytes + 1), 'a');
  EXPECT_THAT(body_error(T::kStoreSet, R"({"lease_id":1,"key":"k","value":")" + big + "\"}"),
              HasSubstr("STORE_SET: value of 65537 bytes exceeds the limit of 65536"));
  EXPECT_THROW(encode(StoreSetMessage{.lease_id = 1, .key = std::string(257, 'k')}), ProtocolError);
  EXPECT_THROW(encode(StoreKeysMessage{.entries = {{"", "v"}}}), ProtocolError);
}

TEST(Protocol, AByeListsThePreemptedLeasesAndAPlainOneStaysEmpty) {
  const ByeMessage preempted{.preempted = {{.lease_id = 7, .checkpoint = true}, {.lease_id = 9}}};
  EXPECT_EQ(
      encode(preempted)[1],
      R"({"preempted":[{"lease_id":7,"checkpoint":true},{"lease_id":9,"checkpoint":false}]})");
  EXPECT_EQ(round_trip(preempted), Message(preempted));
  // A plain BYE is the empty body older peers send and read: the sender left.
  EXPECT_EQ(encode(ByeMessage{})[1], "{}");
  EXPECT_EQ(decode(frames_of(MessageType::kBye, "{}")), Message(ByeMessage{}));
  EXPECT_EQ(decode(frames_of(MessageType::kBye, R"({"preempted":[]})")), Message(ByeMessage{}));
}

TEST(Protocol, AByeWithAGarbledPreemptedListIsRefused) {
  using T = MessageType;
  EXPECT_EQ(body_error(T::kBye, R"({"preempted":7})"),
            "BYE.preempted: expected an array, got number");
  EXPECT_EQ(body_error(T::kBye, R"({"preempted":[7]})"),
            "BYE.preempted[0]: expected an object, got number");
  EXPECT_EQ(body_error(T::kBye, R"({"preempted":[{"checkpoint":true}]})"),
            "BYE.preempted[0].lease_id: missing");
  EXPECT_EQ(body_error(T::kBye, R"({"preempted":[{"lease_id":-1,"checkpoint":true}]})"),
            "BYE.preempted[0].lease_id: integer out of range [0, 18446744073709551615]");
  EXPECT_EQ(body_error(T::kBye, R"({"preempted":[{"lease_id":1}]})"),
            "BYE.preempted[0].checkpoint: missing");
  EXPECT_EQ(body_error(T::kBye, R"({"preempted":[{"lease_id":1,"checkpoint":"yes"}]})"),
            "BYE.preempted[0].checkpoint: expected a boolean, got string");
  EXPECT_EQ(body_error(T::kBye, R"({"preempted":[{"lease_id":1,"checkpoint":true},)"
                                R"({"lease_id":1,"checkpoint":false}]})"),
            "BYE.preempted[1].lease_id: lease 1 is listed twice");
}

TEST(Protocol, TrialNodesAreOptionalAndChecked) {
  const TrialMessage one{.lease_id = 1};
  EXPECT_EQ(encode(one)[1].find("nodes"), std::string::npos) << "one node: as before";
  const TrialMessage part{.lease_id = 1, .node = 1, .nodes = 2};
  EXPECT_EQ(round_trip(part), Message(part));
  const std::string base = R"({"lease_id":1,"study_name":"s","trial_id":1,"number":0,)"
                           R"("attempt":0,"params":{},"job_json":"{}",)"
                           R"("heartbeat_interval_ms":1,"gpus":[])";
  EXPECT_EQ(body_error(MessageType::kTrial, base + R"(,"node":2,"nodes":2})"),
            "TRIAL.node: node 2 of 2: expected 0 <= node < nodes");
  EXPECT_EQ(body_error(MessageType::kTrial, base + R"(,"nodes":"2"})"),
            "TRIAL.nodes: expected an integer, got string");
  const HelloMessage hello{
      .executor_id = "e", .leases = {{.lease_id = 3, .study_name = "s", .trial_id = 1, .node = 1}}};
  EXPECT_EQ(round_trip(hello), Message(hello));
}

TEST(Protocol, FileChunksTravelAsBase64) {
  auto frames = encode(FileChunkMessage{
      .lease_id = 2, .kind = TrialFileKind::kLog, .size = 5, .offset = 0, .data = "hello"});
  EXPECT_EQ(frames[0], header(kProtocolVersion, 14));
  EXPECT_EQ(frames[1],
            R"({"lease_id":2,"kind":"log","path":"","size":5,"offset":0,"data":"aGVsbG8="})");
  EXPECT_EQ(to_string(MessageType::kFile), "FILE");
  EXPECT_EQ(to_string(MessageType::kFileAck), "FILE_ACK");
  EXPECT_EQ(to_string(MessageType::kFilesLeft), "FILES_LEFT");
  // Every length's padding, and every byte, round trip.
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{256}}) {
    const FileChunkMessage chunk{.lease_id = 1,
                                 .kind = TrialFileKind::kArtifact,
                                 .path = "a",
                                 .size = n,
                                 .data = bytes.substr(0, n)};
    EXPECT_EQ(round_trip(chunk), Message(chunk)) << n;
  }
  // A whole chunk fits a message.
  const FileChunkMessage full{.lease_id = 1,
                              .kind = TrialFileKind::kArtifact,
                              .path = "big.bin",
                              .size = uint64_t{1} << 40,
                              .offset = uint64_t{1} << 39,
                              .data = std::string(kMaxFileChunkBytes, '\xab')};
  EXPECT_EQ(round_trip(full), Message(full));
  const FileAckMessage ended{.lease_id = 3, .lease_ended = true, .reason = "lease 3 expired"};
  EXPECT_EQ(round_trip(ended), Message(ended));
  EXPECT_EQ(encode(FileAckMessage{.lease_id = 3})[1].find("lease_ended"), std::string::npos);
}

// A preempted trial's checkpoint file travels as an artifact marked `checkpoint`; absent (an older
// executor's FILE), the mark is false.
TEST(Protocol, AFileOfALineagesCheckpointIsMarkedAndNamedByItsFileName) {
  const FileChunkMessage chunk{.lease_id = 4,
                               .kind = TrialFileKind::kArtifact,
                               .path = "resume.ckpt",
                               .size = 3,
                               .data = "abc",
                               .checkpoint = true};
  EXPECT_EQ(round_trip(chunk), Message(chunk));
  EXPECT_NE(encode(chunk)[1].find(R"("checkpoint":true)"), std::string::npos);
  FileChunkMessage plain = chunk;
  plain.checkpoint = false;
  EXPECT_EQ(encode(plain)[1].find("checkpoint"), std::string::npos);
  EXPECT_EQ(round_trip(plain), Message(plain));
  using T = MessageType;
  EXPECT_EQ(body_error(T::kFile, R"({"lease_id":1,"kind":"artifact","path":"a/resume.ckpt",)"
                                 R"("size":0,"offset":0,"data":"","checkpoint":true})"),
            R"(FILE.path: 'a/resume.ckpt' is not a file name (".", "..", a '/' or a NUL byte))");
  EXPECT_EQ(body_error(T::kFile, R"({"lease_id":1,"kind":"log","path":"","size":0,)"
                                 R"("offset":0,"data":"","checkpoint":true})"),
            "FILE.checkpoint: a log is no checkpoint's file");
  FileChunkMessage bad = chunk;
  bad.path = "../resume.ckpt";
  EXPECT_THROW(encode(bad), ProtocolError);
}

TEST(Protocol, ACheckpointFileIsANameInTheCheckpointsFolder) {
  EXPECT_EQ(checkpoint_file_problem("resume.ckpt.history.json"), "");
  for (const std::string& bad :
       std::vector<std::string>{"", ".", "..", "../x", "a/b", "/etc/passwd", std::string("a\0b", 3),
                                std::string(256, 'a')}) {
    EXPECT_NE(checkpoint_file_problem(bad), "") << bad;
    EXPECT_THROW(encode(CheckpointGetMessage{.file = bad}), ProtocolError) << bad;
  }
  EXPECT_EQ(body_error(MessageType::kCheckpointGet,
                       R"({"lease_id":1,"of":"start","file":"../trial-3/model.ckpt","offset":0})"),
            "CHECKPOINT_GET.file: '../trial-3/model.ckpt' is not a file name (\".\", \"..\", a "
            "'/' or a NUL byte)");
  EXPECT_EQ(body_error(MessageType::kCheckpointGet,
                       R"({"lease_id":1,"of":"other","file":"a","offset":0})"),
            "CHECKPOINT_GET.of: expected \"start\" or \"own\", got \"other\"");
  // A file not found carries no bytes; a chunk stays within the file's size.
  EXPECT_THROW(encode(CheckpointDataMessage{.file = "a", .size = 2, .data = "ab", .found = false}),
               ProtocolError);
  EXPECT_THROW(encode(CheckpointDataMessage{.file = "a", .offset = 1, .size = 2, .data = "ab"}),
               ProtocolError);
  const CheckpointDataMessage missing{.lease_id = 3,
                                      .file = "resume.ckpt",
                                      .found = false,
                                      .reason = "no checkpoint at /a/trial-2/resume.ckpt"};
  EXPECT_EQ(round_trip(missing), Message(missing));
}

// A CHECKPOINT_GET "stat" and the lease that wrote the coordinator's copy: optional, absent when
// unset, so that an older peer reads the same bodies and answers a stat with bytes.
TEST(Protocol, CheckpointStatAndWriterLeaseRoundTripAndStayOutWhenUnset) {
  const CheckpointGetMessage stat{
      .lease_id = 5, .of = CheckpointOf::kOwn, .file = "resume.ckpt", .stat = true};
  EXPECT_EQ(round_trip(stat), Message(stat));
  const CheckpointDataMessage sized{.lease_id = 5,
                                    .of = CheckpointOf::kOwn,
                                    .file = "resume.ckpt",
                                    .size = 9,
                                    .written_by_lease = 4};
  EXPECT_EQ(round_trip(sized), Message(sized));
  EXPECT_THAT(encode(CheckpointGetMessage{.file = "a"})[1], Not(HasSubstr("stat")));
  EXPECT_THAT(encode(CheckpointDataMessage{.file = "a"})[1], Not(HasSubstr("written_by_lease")));
  EXPECT_EQ(round_trip(CheckpointGetMessage{.lease_id = 1, .file = "a"}),
            Message(CheckpointGetMessage{.lease_id = 1, .file = "a"}));
}

TEST(Protocol, TrialFilePathsStayInsideTheTrialsFolder) {
  EXPECT_EQ(trial_file_path_problem("events.out.tfevents.1.host"), "");
  EXPECT_EQ(trial_file_path_problem("a/b/c.txt"), "");
  EXPECT_EQ(trial_file_path_problem("..a/b.."), "");
  EXPECT_EQ(trial_file_path_problem(""), "expected 1 to 1024 bytes, got 0");
  EXPECT_EQ(trial_file_path_problem(std::string(1025, 'a')), "expected 1 to 1024 bytes, got 1025");
  EXPECT_EQ(trial_file_path_problem("/etc/passwd"), "'/etc/passwd' is absolute");
  for (const char* bad : {"..", "../x", "a/../../x", "a/..", "./a", "a//b", "a/", "a/./b"}) {
    EXPECT_THAT(trial_file_path_problem(bad), HasSubstr("has a component that is empty")) << bad;
  }
  EXPECT_EQ(trial_file_path_problem(std::string("a\0b", 3)), "holds a NUL byte");
}

TEST(Protocol, FileMessagesRefuseWhatCouldWriteElsewhereOrOutOfBounds) {
  using T = MessageType;
  const std::string head = R"({"lease_id":1,"kind":"artifact","size":4,"offset":0,)";
  EXPECT_EQ(body_error(T::kFile, head + R"("path":"../x","data":""})"),
            "FILE.path: '../x' has a component that is empty, '.' or '..'");
  EXPECT_EQ(body_error(T::kFile, head + R"("path":"/x","data":""})"),
            "FILE.path: '/x' is absolute");
  EXPECT_EQ(body_error(T::kFile, R"({"lease_id":1,"kind":"log","path":"x","size":0,)"
                                 R"("offset":0,"data":""})"),
            "FILE.path: a log's path must be empty");
  EXPECT_EQ(body_error(T::kFile, R"({"lease_id":1,"kind":"core","path":"x","size":0,)"
                                 R"("offset":0,"data":""})"),
            R"(FILE.kind: expected "log" or "artifact", got "core")");
  EXPECT_EQ(body_error(T::kFile, head + R"("path":"x","data":"aGVsbG8="})"),
            "FILE: bytes 0 to 5 are beyond the file's size 4");
  EXPECT_EQ(body_error(T::kFile, R"({"lease_id":1,"kind":"log","path":"","size":4,)"
                                 R"("offset":5,"data":""})"),
            "FILE: bytes 5 to 5 are beyond the file's size 4");
  EXPECT_EQ(body_error(T::kFile, R"({"lease_id":1,"kind":"log","path":"",)"
                                 R"("size":18446744073709551615,"offset":18446744073709551615,)"
                                 R"("data":"aGk="})"),
            "FILE: bytes 18446744073709551615 to 1 are beyond the file's size "
            "18446744073709551615");
  for (const char* bad : {"aGVsbG8", "aGVsbG8=x", "aGV=bG8=", "a===", "aGVsbG9=", "aGk*"}) {
    EXPECT_EQ(body_error(T::kFile, head + R"("path":"x","data":")" + bad + "\"}"),
              "FILE.data: expected base64 (RFC 4648, padded)")
        << bad;
  }
  const std::string big((kMaxFileChunkBytes + 2) / 3 * 4 + 4, 'A');
  EXPECT_THAT(body_error(T::kFile, R"({"lease_id":1,"kind":"log","path":"","size":1,)"
                                   R"("offset":0,"data":")" +
                                       big + "\"}"),
              HasSubstr("FILE.data: 1398108 base64 digits exceed the limit of 1398104"));
  EXPECT_EQ(body_error(T::kFileAck, R"({"lease_id":1,"kind":"artifact","path":"a/../b",)"
                                    R"("offset":0,"accepted":true,"reason":""})"),
            "FILE_ACK.path: 'a/../b' has a component that is empty, '.' or '..'");
  EXPECT_EQ(body_error(T::kFilesLeft, R"({"lease_id":1,"hostname":"h","limit_bytes":1,)"
                                      R"("files":[{"path":"/x"}]})"),
            "FILES_LEFT.files[0].size: missing");
  EXPECT_THROW(encode(FileChunkMessage{.kind = TrialFileKind::kArtifact, .path = "../x"}),
               ProtocolError);
  EXPECT_THROW(encode(FileChunkMessage{.size = 1, .data = "ab"}), ProtocolError);
  EXPECT_THROW(encode(FileChunkMessage{.size = kMaxFileChunkBytes + 1,
                                       .data = std::string(kMaxFileChunkBytes + 1, 'x')}),
               ProtocolError);
}

TEST(ProtocolTest, AHelloWithoutLeasesHoldsNone) {
  const Message m = decode(frames_of(
      MessageType::kHello,
      R"({"executor_id":"e","hostname":"h","pid":1,"resources":{"cpu_slots":1,"gpus":[]}})"));
  EXPECT_TRUE(std::get<HelloMessage>(m).leases.empty());
}

}  // namespace
}  // namespace tuner
