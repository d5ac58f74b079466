// Datasets: IDX (real Fashion-MNIST slices and generated, corrupt files), CSV, split,
// normalization and mini-batches.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "training/data/batch_loader.h"
#include "training/data/csv.h"
#include "training/data/csv_cells.h"
#include "training/data/dataset.h"
#include "training/data/fashion_mnist.h"
#include "training/data/idx.h"
#include "training/data/npy.h"

namespace tuner::training {
namespace {

const std::string kFashion = fashion_mnist_dir();

class TempDir {
 public:
  TempDir() : path_("/tmp/tuner_data_test_" + std::to_string(::getpid())) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name, const std::string& bytes) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

 private:
  std::string path_;
};

std::string u32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// An IDX image file of n images of h x w whose pixel k is (k % 256), cut to `body` bytes.
std::string idx_images(uint32_t n, uint32_t h, uint32_t w, int64_t body = -1,
                       uint32_t magic = 0x803) {
  std::string s = u32(magic) + u32(n) + u32(h) + u32(w);
  const int64_t full = int64_t{n} * h * w;
  for (int64_t k = 0; k < (body < 0 ? full : body); ++k) s += static_cast<char>(k % 256);
  return s;
}
std::string idx_labels(uint32_t n, uint32_t header_n) {
  std::string s = u32(0x801) + u32(header_n);
  for (uint32_t k = 0; k < n; ++k) s += static_cast<char>(k % 3);
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Idx, ReadsASliceOfFashionMnistFromTheGzipFiles) {
  const Dataset d = read_idx(kFashion + "train-images-idx3-ubyte.gz",
                             kFashion + "train-labels-idx1-ubyte.gz", 1000);
  EXPECT_EQ(d.size(), 1000);
  EXPECT_EQ(d.sample_shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(d.num_classes(), 10);
  EXPECT_EQ(d.labels()[0], 9);  // the first training image is an ankle boot
  EXPECT_EQ(d.labels()[1], 0);
  float lo = 1, hi = 0;
  for (float v : d.features()) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
}

TEST(Idx, ReadsGeneratedFilesAndNamesTheFileOfEveryError) {
  TempDir dir;
  const std::string images = dir.file("img", idx_images(4, 2, 3));
  const std::string labels = dir.file("lab", idx_labels(4, 4));
  const Dataset d = read_idx(images, labels);
  EXPECT_EQ(d.size(), 4);
  EXPECT_EQ(d.sample_shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(d.num_classes(), 3);
  EXPECT_FLOAT_EQ(d.sample(1)[0], 6.0f / 255.0f);
  EXPECT_EQ(read_idx(images, labels, 2).size(), 2);

  const std::string bad_magic = dir.file("bad", idx_images(4, 2, 3, -1, 0x12345678));
  EXPECT_EQ(error_of([&] { read_idx(bad_magic, labels); }),
            bad_magic +
                ": bad magic number 0x12345678 (an IDX image file starts with "
                "0x00000803); is this the right file?");
  EXPECT_EQ(error_of([&] { read_idx(labels, labels); }).rfind(labels + ": bad magic number", 0),
            0u);
  const std::string truncated = dir.file("trunc", idx_images(4, 2, 3, 20));
  EXPECT_EQ(error_of([&] { read_idx(truncated, labels); }),
            truncated +
                ": truncated: expected 24 bytes of 4 images of 2x3 (the header promises "
                "4), the file ends after 20");
  const std::string header_only = dir.file("hdr", u32(0x803) + u32(4));
  EXPECT_EQ(error_of([&] { read_idx(header_only, labels); }),
            header_only + ": truncated: the file ends inside the height of the header");
  const std::string five = dir.file("five", idx_labels(5, 5));
  EXPECT_EQ(error_of([&] { read_idx(images, five); }),
            images + " has 4 images but " + five + " has 5 labels");
  const std::string short_labels = dir.file("short", idx_labels(3, 4));
  EXPECT_NE(error_of([&] { read_idx(images, short_labels); }).find(short_labels + ": truncated"),
            std::string::npos);
  const std::string missing = dir.file("x", "") + ".missing";
  EXPECT_EQ(error_of([&] { read_idx(missing, labels); }), missing + ": cannot open");
}

// Regression: an image file whose header promised more pixels than it held was allocated at
// the promised size before reading, so a small file could ask for terabytes.
TEST(Idx, AHeaderPromisingMorePixelsThanTheFileHoldsIsRefusedAsTruncated) {
  TempDir dir;
  const std::string images = dir.file("huge", u32(0x803) + u32(1000) + u32(65536) + u32(65536));
  const std::string labels = dir.file("lab1000", idx_labels(1000, 1000));
  EXPECT_EQ(error_of([&] { read_idx(images, labels); }),
            images +
                ": truncated: expected 4294967296000 bytes of 1000 images of 65536x65536 (the "
                "header promises 1000), the file ends after 0");
}

TEST(Idx, TruncatedGzipIsAnError) {
  TempDir dir;
  std::ifstream in(kFashion + "t10k-images-idx3-ubyte.gz", std::ios::binary);
  std::string bytes(20000, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const std::string cut = dir.file("cut.gz", bytes);
  const std::string err = error_of([&] { read_idx(cut, kFashion + "t10k-labels-idx1-ubyte.gz"); });
  EXPECT_EQ(err.rfind(cut + ": ", 0), 0u) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
}

TEST(Csv, ReadsLabelsAndFeaturesAndReportsFileAndLine) {
  TempDir dir;
  const std::string ok = dir.file("ok.csv", "a,b,label\r\n1,2,0\r\n\r\n3.5, -4e1 ,2\r\n");
  CsvOptions opt;
  opt.label_column = -1;
  const Dataset d = read_csv(ok, opt);
  EXPECT_EQ(d.size(), 2);
  EXPECT_EQ(d.sample_shape(), (Shape{2}));
  EXPECT_EQ(d.num_classes(), 3);
  EXPECT_EQ(d.labels()[1], 2);
  EXPECT_FLOAT_EQ(d.sample(1)[1], -40.0f);

  const std::string ragged = dir.file("ragged.csv", "0,1,2\n1,2\n");
  EXPECT_EQ(error_of([&] { read_csv(ragged); }),
            ragged + ":2: expected 3 columns (as the first row), got 2");
  const std::string word = dir.file("word.csv", "0,1,2\n1,x1,2\n");
  EXPECT_EQ(error_of([&] { read_csv(word); }), word + ":2: column 2: \"x1\" is not a number");
  const std::string frac = dir.file("frac.csv", "0.5,1,2\n");
  EXPECT_EQ(error_of([&] { read_csv(frac, {.header = CsvOptions::Header::kNo}); }),
            frac + ":1: column 1: label \"0.5\" is not an integer in [0, inf)");
  const std::string empty = dir.file("empty.csv", "label,x\n");
  EXPECT_EQ(error_of([&] { read_csv(empty); }), empty + ": no data rows");
  CsvOptions shaped;
  shaped.sample_shape = Shape{1, 1, 3};
  EXPECT_EQ(error_of([&] { read_csv(ragged, shaped); }),
            ragged + ":2: expected 3 columns (as the first row), got 2");
  const std::string img = dir.file("img.csv", "1,0,0,1\n0,1,1,0\n");
  EXPECT_EQ(read_csv(img, shaped).sample_shape(), (Shape{1, 1, 3}));
}

Dataset counting(int64_t n) {
  std::vector<float> f(n * 2);
  std::vector<int32_t> l(n);
  for (int64_t i = 0; i < n; ++i) f[2 * i] = static_cast<float>(i), f[2 * i + 1] = 1, l[i] = i % 4;
  return Dataset(Shape{2}, std::move(f), std::move(l), 4);
}

TEST(Split, IsSeededAndDisjoint) {
  const Dataset d = counting(100);
  const TrainValidationSplit a = split_train_validation(d, 20, 7);
  const TrainValidationSplit b = split_train_validation(d, 20, 7);
  EXPECT_EQ(a.train.size(), 80);
  EXPECT_EQ(a.validation.size(), 20);
  EXPECT_TRUE(
      std::equal(a.train.features().begin(), a.train.features().end(), b.train.features().begin()));
  std::vector<bool> seen(100);
  for (const Dataset* part : {&a.train, &a.validation}) {
    for (int64_t i = 0; i < part->size(); ++i) {
      const int64_t id = static_cast<int64_t>(part->sample(i)[0]);
      EXPECT_FALSE(seen[id]);
      seen[id] = true;
      EXPECT_EQ(part->labels()[i], id % 4);
    }
  }
  EXPECT_THROW(split_train_validation(d, 101, 1), std::invalid_argument);
}

TEST(Normalizer, UsesTheTrainingSplitsStatistics) {
  Dataset train = counting(4);  // feature 0: 0 1 2 3, feature 1: all ones
  Dataset other = counting(2);
  const Normalizer per = Normalizer::fit(train, NormalizeBy::kChannel);
  ASSERT_EQ(per.mean().size(), 2u);
  EXPECT_FLOAT_EQ(per.mean()[0], 1.5f);
  EXPECT_FLOAT_EQ(per.stddev()[0], std::sqrt(1.25f));
  EXPECT_FLOAT_EQ(per.stddev()[1], 1.0f);  // constant feature: std taken as 1
  per.apply(other);
  EXPECT_FLOAT_EQ(other.sample(1)[0], (1 - 1.5f) / std::sqrt(1.25f));
  EXPECT_FLOAT_EQ(other.sample(1)[1], 0.0f);
  const Normalizer all = Normalizer::fit(train, NormalizeBy::kAll);
  ASSERT_EQ(all.mean().size(), 1u);
  EXPECT_FLOAT_EQ(all.mean()[0], 1.25f);
}

TEST(BatchLoader, CoversEveryEpochInASeededOrderWithoutReallocating) {
  const Dataset d = counting(10);
  BatchLoader loader(d, {.batch_size = 4, .shuffle = true, .seed = 3});
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  auto epoch = [&] {
    std::vector<int64_t> ids;
    std::vector<const float*> buffers;
    loader.start_epoch();
    while (const Batch* b = loader.next()) {
      buffers.push_back(b->x.data());
      for (int64_t i = 0; i < b->x.dim(0); ++i) {
        ids.push_back(static_cast<int64_t>(b->x.at({i, 0})));
        EXPECT_EQ(b->labels[i], ids.back() % 4);
      }
    }
    EXPECT_EQ(buffers.size(), 3u);
    for (const float* p : buffers) EXPECT_EQ(p, buffers[0]);
    return ids;
  };
  const auto state = loader.rng_state();
  const std::vector<int64_t> first = epoch();
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(sorted[i], i);
  const std::vector<int64_t> second = epoch();
  EXPECT_NE(first, second);
  loader.set_rng_state(state);
  EXPECT_EQ(epoch(), first);

  BatchLoader drop(d, {.batch_size = 4, .shuffle = false, .drop_last = true});
  EXPECT_EQ(drop.batches_per_epoch(), 2);
  drop.start_epoch();
  EXPECT_EQ(drop.next()->x.at({0, 0}), 0.0f);
  EXPECT_NE(drop.next(), nullptr);
  EXPECT_EQ(drop.next(), nullptr);
}

}  // namespace
TEST(CsvCells, SplitsQuotedFieldsAndReadsMissingNumbersAndIntegers) {
  EXPECT_EQ(split_csv_line(R"(a, "b,c" ,"say ""hi""",)", ','),
            (std::vector<std::string>{"a", "b,c", "say \"hi\"", ""}));
  EXPECT_EQ(split_csv_line("x\ty\r", '\t'), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(split_csv_line(R"(a,"open)", ','), std::nullopt);
  for (const char* missing : {"", "NA", "n/a", "NaN"}) EXPECT_TRUE(is_missing_cell(missing));
  EXPECT_FALSE(is_missing_cell("0"));
  EXPECT_EQ(number_cell("+1.5"), 1.5);
  EXPECT_EQ(number_cell("2e3"), 2000.0);
  EXPECT_EQ(number_cell("1e400"), std::nullopt);
  EXPECT_EQ(number_cell("x"), std::nullopt);
  EXPECT_EQ(integer_cell("-7"), -7);
  EXPECT_EQ(integer_cell("7.0"), std::nullopt);
  EXPECT_EQ(integer_cell(""), std::nullopt);
}

// A .npy file (format 1.0) of `descr` and `shape` (a Python tuple's text) holding `data`.
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string file = "\x93NUMPY\x01";
  file += '\0';
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  return file + header + data;
}

// Regression: a shape dimension of more digits than int64_t holds overflowed while parsed.
TEST(Npy, ADimensionPastInt64IsRefused) {
  TempDir dir;
  const std::string file =
      dir.file("big.npy", npy_file("<f4", "(99999999999999999999999, 2)", std::string(8, '\0')));
  EXPECT_EQ(error_of([&] { NpyArray::open(file); }),
            file + ": the header's shape has a dimension past 2^63: 99999999999999999999999");
}

// Regression: a shape whose element count overflowed 64 bits wrapped to a small byte count, so
// a short file passed the size check and its reads went past the mapping.
TEST(Npy, AShapeWhoseSizeOverflowsIsRefusedAsTruncated) {
  TempDir dir;
  const std::string file =
      dir.file("wrap.npy", npy_file("<f4", "(4294967296, 4294967296, 16)", std::string(64, '\0')));
  EXPECT_EQ(error_of([&] { NpyArray::open(file); }),
            file +
                ": truncated: the header's shape (4294967296, 4294967296, 16) of <f4 needs over "
                "2^64 bytes of data, the file has 64");
  // Empty, however large the other dimensions (their product was computed first, and overflowed).
  const std::string empty =
      dir.file("empty.npy", npy_file("<f4", "(4611686018427387904, 4, 0)", ""));
  EXPECT_EQ(NpyArray::open(empty).size(), 0);
}

// A .npz archive of one member NAME.npy holding `npy`, deflated, whose headers claim `claimed`
// uncompressed bytes (npy.size() when negative).
std::string npz_deflated(const std::string& name, const std::string& npy, int64_t claimed = -1) {
  std::string deflated(compressBound(static_cast<uLong>(npy.size())) + 64, '\0');
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(npy.data()));
  zs.avail_in = static_cast<uInt>(npy.size());
  zs.next_out = reinterpret_cast<Bytef*>(deflated.data());
  zs.avail_out = static_cast<uInt>(deflated.size());
  deflate(&zs, Z_FINISH);
  deflated.resize(zs.total_out);
  deflateEnd(&zs);
  const uint32_t usize = static_cast<uint32_t>(claimed < 0 ? npy.size() : claimed);
  const uint32_t csize = static_cast<uint32_t>(deflated.size());
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(npy.data()), static_cast<uInt>(npy.size())));
  auto le = [](uint64_t v, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
    return out;
  };
  const std::string member = name + ".npy";
  const std::string local = le(0x04034b50, 4) + le(20, 2) + le(0, 2) + le(8, 2) + le(0, 4) +
                            le(crc, 4) + le(csize, 4) + le(usize, 4) + le(member.size(), 2) +
                            le(0, 2) + member;
  const std::string central = le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + le(8, 2) +
                              le(0, 4) + le(crc, 4) + le(csize, 4) + le(usize, 4) +
                              le(member.size(), 2) + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 2) +
                              le(0, 4) + le(0, 4) + member;
  const uint64_t cd_at = local.size() + deflated.size();
  const std::string end = le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(1, 2) + le(1, 2) +
                          le(central.size(), 4) + le(cd_at, 4) + le(0, 2);
  return local + deflated + central + end;
}

TEST(Npy, ADeflatedNpzMemberIsInflated) {
  TempDir dir;
  std::string values;
  for (int i = 0; i < 3000; ++i) values += std::string(3, '\0') + static_cast<char>(i % 7);
  const std::string file = dir.file("d.npz", npz_deflated("x", npy_file("<i4", "(3000,)", values)));
  const NpyArray x = NpyArray::open_npz(file, "x");
  ASSERT_EQ(x.size(), 3000);
  EXPECT_EQ(x.integer(0), 0);
  EXPECT_EQ(x.integer(2999), (int64_t{2999 % 7} << 24));
}

// Regression: a deflated member was inflated into a buffer of the size its header claimed,
// allocated first, so a few bytes claiming 4 GiB took 4 GiB; a member must hold what it claims.
TEST(Npy, ADeflatedNpzMemberHoldingOtherThanItClaimsIsCorrupt) {
  TempDir dir;
  const std::string npy = npy_file("<f4", "(4,)", std::string(16, '\0'));
  for (const int64_t claimed :
       {int64_t{0xFFFFFFF0}, int64_t(npy.size() - 1), int64_t(npy.size() + 1)}) {
    const std::string file = dir.file("c.npz", npz_deflated("x", npy, claimed));
    EXPECT_EQ(error_of([&] { NpyArray::open_npz(file, "x"); }),
              file + ": member x.npy: corrupt compressed data")
        << "claimed " << claimed;
  }
}

}  // namespace tuner::training
