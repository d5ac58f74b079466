// libFuzzer target for the CSV readers of outside input: a pixel CSV (training/data/csv.h), a
// table's rows as `tuner predict` reads them (registry/table_input.h) and one CSV line
// (training/data/csv_cells.h).
//
// Properties checked on every input:
//   1. each reader returns or throws its error type (DataError, tuner::Error), nothing else
//      (ASan/UBSan catch memory errors);
//   2. what a reader returns is whole: as many values as its rows and columns say.
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "fuzz/table_model.h"
#include "registry/table_input.h"
#include "training/data/csv.h"
#include "training/data/csv_cells.h"
#include "trials/error.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string path = tuner::fuzz::write_file("input.csv", text);

  try {
    const tuner::training::Dataset set = tuner::training::read_csv(path, {.label_column = -1});
    if (set.features().size() != static_cast<size_t>(set.size() * set.sample_numel()))
      fail("read_csv: features do not fill the samples");
  } catch (const tuner::training::DataError&) {
  }

  try {
    const tuner::registry::TableInput rows =
        tuner::registry::read_table_input(path, tuner::fuzz::table_model(), /*limit=*/-1, ',');
    if (rows.features.size() != static_cast<size_t>(rows.count * 4) ||
        rows.lines.size() != static_cast<size_t>(rows.count))
      fail("read_table_input: features or lines do not fill the rows");
  } catch (const tuner::Error&) {
  }

  const std::string_view line = text.substr(0, text.find('\n'));
  (void)tuner::training::split_csv_line(line, ',');
  (void)tuner::training::number_cell(line);
  (void)tuner::training::integer_cell(line);
  return 0;
}
