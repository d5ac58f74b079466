#include "serving/serving_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tuner::serving {
namespace {

using ::testing::HasSubstr;

TEST(ServingMetricsTest, CountsInPrometheusTextFormat) {
  ServingMetrics m;
  m.set_model("fm\"nist", 3);
  m.record_request("/invocations", 200, 0.0003);
  m.record_request("/invocations", 200, 0.002);
  m.record_request("/invocations", 400, 0.0001);
  m.record_request("/nowhere", 404);
  m.record_error("BAD_REQUEST");
  m.record_batch(5, 2);
  m.record_batch(64, 64);
  m.record_reload(true);
  m.record_logged(LogOutcome::kDropped);
  const std::string text = m.prometheus_text();
  EXPECT_THAT(text, HasSubstr("# TYPE tuner_serving_requests_total counter\n"));
  EXPECT_THAT(text,
              HasSubstr("tuner_serving_requests_total{path=\"/invocations\",status=\"200\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_requests_total{path=\"other\",status=\"404\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_errors_total{error_code=\"BAD_REQUEST\"} 1\n"));
  // Cumulative buckets: 0.0001 <= 0.0001; 0.0003 <= 0.0005; 0.002 <= 0.0025.
  EXPECT_THAT(text, HasSubstr("tuner_serving_request_duration_seconds_bucket{le=\"0.0001\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_request_duration_seconds_bucket{le=\"0.0005\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_request_duration_seconds_bucket{le=\"0.001\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_request_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_request_duration_seconds_count 3\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_batch_samples_bucket{le=\"4\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_batch_samples_bucket{le=\"8\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_batch_samples_sum 69\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_batched_requests_total 66\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_model_version{model=\"fm\\\"nist\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_model_reloads_total{result=\"loaded\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_logged_requests_total{result=\"dropped\"} 1\n"));
}

TEST(ServingMetricsTest, LogWritesThatFailCountAsFailedNotWritten) {
  ServingMetrics m;
  m.record_logged(LogOutcome::kWritten);
  m.record_logged(LogOutcome::kFailed);
  m.record_logged(LogOutcome::kFailed);
  const std::string text = m.prometheus_text();
  EXPECT_THAT(text, HasSubstr("tuner_serving_logged_requests_total{result=\"written\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_logged_requests_total{result=\"failed\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("tuner_serving_logged_requests_total{result=\"dropped\"} 0\n"));
}

}  // namespace
}  // namespace tuner::serving
