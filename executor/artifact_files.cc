#include "executor/artifact_files.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "executor/trial_job.h"

namespace tuner {

namespace fs = std::filesystem;

namespace {

// How far below a trial's folder files are looked for, and how many entries are looked at in
// all, so that a folder of millions of files costs a bounded walk.
constexpr int kMaxDepth = 16;
constexpr size_t kMaxEntriesWalked = 100'000;

// Whether `text` is valid UTF-8 (a JSON string, and Optuna's artifact_id, must be).
bool valid_utf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
    if (n == 0 || i + n > text.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return false;
    }
    i += n;
  }
  return true;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

ArtifactListing list_artifact_files(const fs::path& dir, size_t max_files) {
  ArtifactListing listing;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return listing;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  size_t walked = 0;
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++walked > kMaxEntriesWalked) {
      listing.truncated = true;
      break;
    }
    if (it.depth() >= kMaxDepth) it.disable_recursion_pending();
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec) || file_ec) continue;
    const uintmax_t size = it->file_size(file_ec);
    if (file_ec) continue;
    listing.files.push_back(
        {fs::relative(it->path(), dir, file_ec).generic_string(), static_cast<uint64_t>(size)});
    if (file_ec) listing.files.pop_back();
  }
  std::sort(listing.files.begin(), listing.files.end(),
            [](const ArtifactFile& a, const ArtifactFile& b) { return a.path < b.path; });
  if (listing.files.size() > max_files) {
    listing.files.resize(max_files);
    listing.truncated = true;
  }
  return listing;
}

MimeGuess guess_mime_type(const std::string& filename) {
  static const std::pair<const char*, const char*> kEncodings[] = {
      {".gz", "gzip"}, {".bz2", "bzip2"}, {".xz", "xz"}, {".br", "br"}, {".Z", "compress"}};
  static const std::pair<const char*, const char*> kTypes[] = {
      {".json", "application/json"}, {".txt", "text/plain"},      {".csv", "text/csv"},
      {".html", "text/html"},        {".htm", "text/html"},       {".md", "text/markdown"},
      {".xml", "text/xml"},          {".py", "text/x-python"},    {".png", "image/png"},
      {".jpg", "image/jpeg"},        {".jpeg", "image/jpeg"},     {".gif", "image/gif"},
      {".svg", "image/svg+xml"},     {".pdf", "application/pdf"}, {".zip", "application/zip"},
      {".tar", "application/x-tar"}, {".mp4", "video/mp4"},       {".wav", "audio/x-wav"}};
  MimeGuess guess{"application/octet-stream", ""};
  std::string name = filename;
  for (const auto& [suffix, encoding] : kEncodings) {
    if (name.size() > std::char_traits<char>::length(suffix) && name.ends_with(suffix)) {
      guess.encoding = encoding;
      name.resize(name.size() - std::char_traits<char>::length(suffix));
      break;
    }
  }
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return guess;
  const std::string extension = lower(name.substr(dot));
  for (const auto& [suffix, type] : kTypes) {
    if (extension == suffix) guess.mimetype = type;
  }
  return guess;
}

std::map<std::string, std::string> optuna_artifact_attrs(int64_t number,
                                                         const std::vector<ArtifactFile>& files) {
  std::map<std::string, std::string> attrs;
  for (const ArtifactFile& file : files) {
    if (!valid_utf8(file.path)) continue;  // no JSON string can name it
    const std::string id = "trial-" + std::to_string(number) + "/" + file.path;
    const std::string filename = fs::path(file.path).filename().string();
    const MimeGuess guess = guess_mime_type(filename);
    const nlohmann::json meta = {
        {"artifact_id", id},
        {"filename", filename},
        {"mimetype", guess.mimetype},
        {"encoding",
         guess.encoding.empty() ? nlohmann::json(nullptr) : nlohmann::json(guess.encoding)}};
    // Optuna stores the meta's JSON text as the attribute's value, itself JSON-encoded.
    attrs[kOptunaArtifactPrefix + id] = nlohmann::json(meta.dump()).dump();
  }
  return attrs;
}

std::map<std::string, std::string> trial_artifact_attrs(const TrialJob& job, int64_t number) {
  const std::string dir = job.trial_dir(number);
  if (dir.empty()) return {};
  return optuna_artifact_attrs(number, list_artifact_files(dir, kMaxRecordedArtifacts).files);
}

}  // namespace tuner
