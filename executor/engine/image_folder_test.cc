// Engine jobs on a folder of images (data.format "image_folder"): the listing (classes from the
// sorted sub-folders, other files skipped), decoding and resizing into [C, H, W] samples, the
// splits, each bad folder or file refused naming it, and trials trained end to end on images the
// test draws.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/engine/datasets.h"
#include "executor/engine/image_folder_loader.h"
#include "executor/engine_job.h"
#include "training/data/image_test_files.h"
#include "training/rng.h"
#include "trials/error.h"

namespace tuner::engine {
namespace {

namespace fs = std::filesystem;
using training::testing::encode_jpeg;
using training::testing::encode_png;
using training::testing::TestPixels;
using training::testing::write_bytes;

class ImageFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("image_folder_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::setenv("TUNER_DATA_CACHE_BYTES", "0", 1);  // every load decodes (data_cache.h)
  }
  void TearDown() override {
    fs::remove_all(dir_);
    ::unsetenv("TUNER_DATA_CACHE_BYTES");
  }

  // Writes `bytes` at `rel` under the temp folder (its folders made); its path.
  std::string put(const std::string& rel, const std::vector<uint8_t>& bytes) {
    const fs::path file = dir_ / rel;
    fs::create_directories(file.parent_path());
    write_bytes(file.string(), bytes);
    return file.string();
  }

  // A job of `data` (its "dir" the temp folder), objective val_accuracy (train_loss when
  // data.validation_fraction is 0).
  nlohmann::json job(nlohmann::json data, nlohmann::json model = nullptr) {
    data["format"] = "image_folder";
    data["dir"] = dir_.string();
    if (model.is_null()) {
      model = nlohmann::json::parse(R"({"layers": [{"type": "flatten"},
          {"type": "linear", "out": 16}, {"type": "relu"}, {"type": "linear", "out": "classes"}]})");
    }
    return {{"kind", "engine"},
            {"model", model},
            {"data", data},
            {"training", {{"epochs", 1}, {"batch_size", 1}}},
            {"objective_metric",
             data.value("validation_fraction", 0.2) == 0 ? "train_loss" : "val_accuracy"}};
  }

  // The splits of `j` as the loader reads them (values in [0, 1], not normalized).
  Splits load_raw(const nlohmann::json& j) {
    const EngineJobSpec spec = parse_engine_job(j.dump());
    return load_raw_data(spec, resolve_engine_job(spec, {}), "job");
  }

  // The message of the Error loading `j` throws ("no error" when none), its code checked.
  std::string load_error(const nlohmann::json& j, ErrorCode code) {
    try {
      load_raw(j);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      return e.what();
    }
    return "no error";
  }

  std::string parse_error(const nlohmann::json& j) {
    try {
      parse_engine_job(j.dump());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }

  fs::path dir_;
};

TEST_F(ImageFolderTest, ClassesAreTheSortedFolderNames) {
  // Each class one solid color, written in an order other than the sorted one.
  const std::vector<std::pair<std::string, uint8_t>> classes = {
      {"zebra", 200}, {"ant", 20}, {"mole", 110}};
  for (const auto& [name, red] : classes) {
    for (int i = 0; i < 3; ++i) {
      put("pets/" + name + "/" + std::to_string(i) + ".png",
          encode_png(TestPixels::solid(8, 8, 3, red, 0, 0)));
    }
  }
  const Splits s = load_raw(job({{"path", "pets"}, {"size", {8, 8}}, {"validation_fraction", 0}}));
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"ant", "mole", "zebra"}));
  EXPECT_EQ(s.name, "pets");
  ASSERT_EQ(s.train.size(), 9);
  EXPECT_EQ(s.train.num_classes(), 3);
  const float red_of[] = {20 / 255.0f, 110 / 255.0f, 200 / 255.0f};  // by label
  for (int64_t i = 0; i < s.train.size(); ++i) {
    EXPECT_FLOAT_EQ(s.train.sample(i)[0], red_of[s.train.labels()[static_cast<size_t>(i)]]);
  }
}

TEST_F(ImageFolderTest, ResizesAndGivesTheChannelsOfColor) {
  // PNG and JPEG, gray and color, of other sizes than the declared one.
  put("d/a/1.png", encode_png(TestPixels::solid(12, 10, 3, 10, 20, 30)));
  put("d/a/2.jpg", encode_jpeg(TestPixels::solid(7, 5, 3, 10, 20, 30)));
  put("d/b/1.JPEG", encode_jpeg(TestPixels::solid(16, 16, 1, 90)));
  put("d/b/sub/2.png", encode_png(TestPixels::solid(3, 3, 1, 90)));
  const Splits rgb = load_raw(job({{"path", "d"}, {"size", {6, 4}}, {"validation_fraction", 0}}));
  EXPECT_EQ(rgb.train.sample_shape(), (training::Shape{3, 6, 4}));
  EXPECT_EQ(rgb.train.size(), 4);
  const Splits gray = load_raw(
      job({{"path", "d"}, {"size", {5, 5}}, {"color", "grayscale"}, {"validation_fraction", 0}}));
  EXPECT_EQ(gray.train.sample_shape(), (training::Shape{1, 5, 5}));
  // Class b's gray 90 as RGB repeats it in each channel (JPEG: within its loss).
  const auto b =
      static_cast<int64_t>(std::find(rgb.train.labels().begin(), rgb.train.labels().end(), 1) -
                           rgb.train.labels().begin());
  for (int64_t c = 0; c < 3; ++c) {
    EXPECT_NEAR(rgb.train.sample(b)[static_cast<size_t>(c * 24 + 7)], 90 / 255.0, 2 / 255.0);
  }
}

TEST_F(ImageFolderTest, PixelValuesOfAKnownImageAfterResize) {
  // 8x8, left half black, right half white, to 4x4 (2x2 blocks averaged) and 3x3 (the middle
  // column halfway between).
  TestPixels p = TestPixels::solid(8, 8, 1, 0);
  for (int y = 0; y < 8; ++y) {
    for (int x = 4; x < 8; ++x) p.at(y, x)[0] = 255;
  }
  put("k/only/half.png", encode_png(p));
  const Splits four = load_raw(
      job({{"path", "k"}, {"size", {4, 4}}, {"color", "grayscale"}, {"validation_fraction", 0}}));
  const std::vector<float> row4 = {0, 0, 1, 1};
  for (size_t i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(four.train.sample(0)[i], row4[i % 4]) << i;
  const Splits three = load_raw(
      job({{"path", "k"}, {"size", {3, 3}}, {"color", "grayscale"}, {"validation_fraction", 0}}));
  const std::vector<float> row3 = {0, 0.5f, 1};
  for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(three.train.sample(0)[i], row3[i % 3], 1e-6) << i;
}

TEST_F(ImageFolderTest, SplitsByFractionsOrByFolders) {
  for (const char* c : {"x", "y"}) {
    for (int i = 0; i < 10; ++i) {
      put(std::string("all/") + c + "/" + std::to_string(i) + ".png",
          encode_png(TestPixels::solid(4, 4, 3, 9, 9, 9)));
    }
    put(std::string("val/") + c + "/v.png", encode_png(TestPixels::solid(4, 4, 3, 1, 1, 1)));
    put(std::string("tst/") + c + "/t.jpg", encode_jpeg(TestPixels::solid(4, 4, 3, 1, 1, 1)));
  }
  const Splits fractions = load_raw(job({{"path", "all"},
                                         {"size", {4, 4}},
                                         {"validation_fraction", 0.25},
                                         {"test_fraction", 0.1},
                                         {"split_seed", 5}}));
  EXPECT_EQ(fractions.train.size(), 13);
  EXPECT_EQ(fractions.validation.size(), 5);
  EXPECT_EQ(fractions.test.size(), 2);
  const Splits folders =
      load_raw(job({{"train", "all"}, {"validation", "val"}, {"test", "tst"}, {"size", {4, 4}}}));
  EXPECT_EQ(folders.train.size(), 20);
  EXPECT_EQ(folders.validation.size(), 2);
  EXPECT_EQ(folders.test.size(), 2);

  // Normalized per channel with the training split's statistics: its channels' means are 0.
  const EngineJobSpec spec =
      parse_engine_job(job({{"path", "all"}, {"size", {4, 4}}, {"split_seed", 1}}).dump());
  EngineTrialConfig config = resolve_engine_job(spec, {});
  const Splits normalized = load_data(spec, config, "job");
  EXPECT_EQ(nlohmann::json::parse(config.model_json)["input"], nlohmann::json({3, 4, 4}));
  for (float v : normalized.train.features()) EXPECT_FLOAT_EQ(v, 0.0f);
}

TEST_F(ImageFolderTest, DecodingOnThreadsGivesTheSameSamples) {
  training::Rng rng(4);
  for (int i = 0; i < 12; ++i) {
    TestPixels p = TestPixels::solid(9, 7, 3, 0, 0, 0);
    for (uint8_t& v : p.values) v = static_cast<uint8_t>(rng.next_u64() % 256);
    put("r/" + std::string(i % 2 ? "odd" : "even") + "/" + std::to_string(i) + ".png",
        encode_png(p));
  }
  nlohmann::json one = job({{"path", "r"}, {"size", {5, 6}}, {"validation_fraction", 0.25}});
  nlohmann::json three = one;
  three["threads"] = 3;
  const Splits a = load_raw(one), b = load_raw(three);
  ASSERT_EQ(a.train.size(), 9);
  EXPECT_TRUE(std::ranges::equal(a.train.features(), b.train.features()));
  EXPECT_TRUE(std::ranges::equal(a.train.labels(), b.train.labels()));
  EXPECT_TRUE(std::ranges::equal(a.validation.features(), b.validation.features()));
}

TEST_F(ImageFolderTest, RefusesTruncatedAndForeignFilesNamingThem) {
  put("t/a/ok.png", encode_png(TestPixels::solid(8, 8, 3, 1, 2, 3)));
  std::vector<uint8_t> png = encode_png(TestPixels::solid(8, 8, 3, 1, 2, 3));
  png.resize(png.size() - 20);
  const std::string cut_png = put("t/b/cut.png", png);
  const std::string e = load_error(job({{"path", "t"}, {"size", {8, 8}}}), ErrorCode::kDataLoss);
  EXPECT_EQ(e.rfind("job.data: " + cut_png + ": truncated PNG (chunk IDAT at byte ", 0), 0u) << e;

  fs::remove(cut_png);
  TestPixels stripes = TestPixels::solid(16, 16, 3, 0, 0, 0);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) stripes.at(y, x)[1] = static_cast<uint8_t>(x * 16 + y);
  }
  std::vector<uint8_t> jpeg = encode_jpeg(stripes);
  jpeg.resize(jpeg.size() * 2 / 3);
  const std::string cut_jpeg = put("t/b/cut.jpg", jpeg);
  const std::string j = load_error(job({{"path", "t"}, {"size", {8, 8}}}), ErrorCode::kDataLoss);
  EXPECT_EQ(j.rfind("job.data: " + cut_jpeg + ": truncated JPEG (", 0), 0u) << j;

  fs::remove(cut_jpeg);
  const std::string gif = put("t/b/fake.png", {'G', 'I', 'F', '8', '9', 'a', 0, 0});
  EXPECT_EQ(load_error(job({{"path", "t"}, {"size", {8, 8}}}), ErrorCode::kDataLoss),
            "job.data: " + gif + ": neither a PNG nor a JPEG file (it starts with 47 49 46 38)");
}

TEST_F(ImageFolderTest, RefusesFoldersThatAreNotInTheLayout) {
  EXPECT_EQ(load_error(job({{"path", "nowhere"}, {"size", {8, 8}}}), ErrorCode::kNotFound),
            "job.data: " + (dir_ / "nowhere").string() + " does not exist");
  // Images directly in the folder, no class sub-folders.
  put("flat/a.png", encode_png(TestPixels::solid(4, 4, 3, 1, 2, 3)));
  EXPECT_EQ(load_error(job({{"path", "flat"}, {"size", {8, 8}}}), ErrorCode::kDataLoss),
            "job.data: " + (dir_ / "flat").string() +
                ": no class sub-folders (image_folder takes one sub-folder per class, holding "
                "its PNG and JPEG files)");
  // A class folder with no images (a text file is not one).
  put("e/cat/1.png", encode_png(TestPixels::solid(4, 4, 3, 1, 2, 3)));
  fs::create_directories(dir_ / "e" / "dog");
  put("e/dog/readme.txt", {'h', 'i'});
  EXPECT_EQ(load_error(job({{"path", "e"}, {"size", {8, 8}}}), ErrorCode::kDataLoss),
            "job.data: " + (dir_ / "e" / "dog").string() +
                ": class folder \"dog\" has no PNG or JPEG files (.png, .jpg, .jpeg)");
}

TEST_F(ImageFolderTest, RefusesAValidationFolderOfOtherClasses) {
  for (const char* c : {"cat", "dog"}) {
    put(std::string("tr/") + c + "/1.png", encode_png(TestPixels::solid(4, 4, 3, 1, 2, 3)));
  }
  for (const char* c : {"cat", "eel"}) {
    put(std::string("va/") + c + "/1.png", encode_png(TestPixels::solid(4, 4, 3, 1, 2, 3)));
  }
  EXPECT_EQ(load_error(job({{"train", "tr"}, {"validation", "va"}, {"size", {4, 4}}}),
                       ErrorCode::kDataLoss),
            "job.data: " + (dir_ / "va").string() +
                ": its class folders (cat, eel) are not those of the training folder " +
                (dir_ / "tr").string() + " (cat, dog): it lacks dog; it has eel, which " +
                (dir_ / "tr").string() + " lacks");
}

TEST_F(ImageFolderTest, SkipsOtherFilesAndSaysHowMany) {
  for (const char* c : {"a", "b"}) {
    put(std::string("s/") + c + "/1.png", encode_png(TestPixels::solid(4, 4, 3, 1, 2, 3)));
    put(std::string("s/") + c + "/notes.txt", {'x'});
    put(std::string("s/") + c + "/.hidden.png", {'x'});  // hidden: not looked at
  }
  ::testing::internal::CaptureStderr();
  const Splits s = load_raw(job({{"path", "s"}, {"size", {4, 4}}, {"validation_fraction", 0}}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(s.train.size(), 2);
  EXPECT_EQ(err, "job.data: skipped 2 files that are not .png, .jpg or .jpeg (e.g. " +
                     (dir_ / "s" / "a" / "notes.txt").string() + ")\n");
}

TEST_F(ImageFolderTest, JobRefusesBadMembers) {
  EXPECT_EQ(parse_error(job({{"path", "p"}})),
            "job.data.size: missing (the [H, W] every image is resized to)");
  EXPECT_EQ(parse_error(job({{"path", "p"}, {"size", {32}}})),
            "job.data.size: expected [H, W], two integers in [1, 16384], got [32]");
  EXPECT_EQ(parse_error(job({{"path", "p"}, {"size", {0, 8}}})),
            "job.data.size: expected [H, W], two integers in [1, 16384], got [0,8]");
  EXPECT_EQ(parse_error(job({{"size", {8, 8}}})),
            "job.data.path: missing (the folder of one sub-folder per class; or \"train\")");
  EXPECT_EQ(parse_error(job({{"path", "p"}, {"size", {8, 8}}, {"color", "cmyk"}}))
                .rfind("job.data.color: ", 0),
            0u);
  EXPECT_EQ(parse_error(job({{"path", "p"}, {"size", {8, 8}}, {"label", "y"}})),
            "job.data.label: unknown member (data of format image_folder has format, dir, path, "
            "train, validation, test, size, color, validation_fraction, test_fraction, "
            "split_seed, augment, normalize, prefetch)");
  EXPECT_EQ(
      parse_error(job(
          {{"train", "p"}, {"validation", "v"}, {"validation_fraction", 0.1}, {"size", {8, 8}}})),
      "job.data.validation_fraction: not with a validation folder (the validation split "
      "is the folder)");
  EXPECT_EQ(
      parse_error(job({{"path", "p"}, {"test", "t"}, {"test_fraction", 0.1}, {"size", {8, 8}}})),
      "job.data.test_fraction: not with a test file (the test split is the file)");
}

// The samples' shape follows from data.size and data.color alone, so a model whose input is
// another shape is refused when the job is read, before any file is decoded (the folder need
// not exist), naming the folder and both shapes, also when the model has placeholders elsewhere.
TEST_F(ImageFolderTest, AModelInputThatIsNotTheFoldersImagesIsRefusedBeforeLoading) {
  const auto model = [](const char* input, const char* width) {
    return nlohmann::json::parse(std::string(R"({"input": )") + input +
                                 R"(, "layers": [{"type": "flatten"},
        {"type": "linear", "out": )" +
                                 width + R"(}, {"type": "linear", "out": "classes"}]})");
  };
  EXPECT_EQ(
      parse_error(job({{"train", "pets/train"}, {"size", {32, 32}}}, model("[1, 28, 28]", "8"))),
      "job.model.input: [1, 28, 28] is not the shape of train's samples, [3, 32, 32]: make "
      "the model's input [3, 32, 32]");
  EXPECT_EQ(parse_error(job({{"path", "pets/"}, {"size", {16, 8}}, {"color", "grayscale"}},
                            model("[3, 16, 8]", "8"))),
            "job.model.input: [3, 16, 8] is not the shape of pets's samples, [1, 16, 8]: make "
            "the model's input [1, 16, 8]");
  EXPECT_EQ(parse_error(job({{"path", "pets"}, {"size", {16, 8}}, {"color", "grayscale"}},
                            model("[1, 16, 8]", "8"))),
            "no error");

  EXPECT_EQ(
      parse_error(job({{"path", "pets"}, {"size", {32, 32}}}, model("[1, 32, 32]", "\"{width}\""))),
      "job.model.input: [1, 32, 32] is not the shape of pets's samples, [3, 32, 32]: make "
      "the model's input [3, 32, 32]");
}

// Three classes told apart by their dominant color, in noisy 16x16 images, PNG and JPEG.
void draw_colors(const fs::path& root, int per_class) {
  training::Rng rng(7);
  const char* names[] = {"blue", "green", "red"};
  for (int k = 0; k < 3; ++k) {
    fs::create_directories(root / names[k]);
    for (int i = 0; i < per_class; ++i) {
      TestPixels p = TestPixels::solid(16, 16, 3, 0, 0, 0);
      for (int y = 0; y < 16; ++y) {
        for (int x = 0; x < 16; ++x) {
          for (int c = 0; c < 3; ++c) {
            const double base = (c == 2 - k ? 150 : 60) + 40 * rng.normal();
            p.at(y, x)[c] = static_cast<uint8_t>(std::clamp(base, 0.0, 255.0));
          }
        }
      }
      const std::string file = (root / names[k] / std::to_string(i)).string();
      if (i % 2) {
        write_bytes(file + ".png", encode_png(p));
      } else {
        write_bytes(file + ".jpg", encode_jpeg(p, 90));
      }
    }
  }
}

TEST_F(ImageFolderTest, TrialsTrainOnAnImageFolderEndToEnd) {
  draw_colors(dir_ / "colors", 30);
  nlohmann::json j =
      job({{"path", "colors"}, {"size", {12, 12}}, {"validation_fraction", 0.3}, {"split_seed", 2}},
          nlohmann::json::parse(R"({"layers": [{"type": "flatten"},
          {"type": "linear", "out": "{width}"}, {"type": "relu"},
          {"type": "linear", "out": "classes"}]})"));
  j["training"] = {{"epochs", 8}, {"batch_size", 8}, {"lr", "{lr}"}, {"seed", 1}};
  j["threads"] = 2;
  j["artifacts_dir"] = (dir_ / "runs").string();
  const EngineJobSpec spec = parse_engine_job(j.dump());
  const std::vector<Params> trials = {{{"width", int64_t{16}}, {"lr", 0.003}},
                                      {{"width", int64_t{32}}, {"lr", 0.01}},
                                      {{"width", int64_t{8}}, {"lr", 0.005}}};
  for (int n = 0; n < static_cast<int>(trials.size()); ++n) {
    const EngineOutcome out = run_engine_trial(spec, {.number = n, .params = trials[n]});
    EXPECT_EQ(out.epochs_completed, 8) << "trial " << n;
    // Chance is 1/3.
    EXPECT_GT(out.final_metrics.at("val_accuracy"), 0.8) << "trial " << n;
  }
  // The model's outputs map back to the class folders.
  std::ifstream data_json(dir_ / "runs" / "trial-0" / "data.json");
  EXPECT_EQ(nlohmann::json::parse(data_json)["classes"], nlohmann::json({"blue", "green", "red"}));
}

}  // namespace
}  // namespace tuner::engine
