// The image-folder loader of the data-set catalogue (datasets.h; internal to executor/): PNG and
// JPEG files in one sub-folder per class, as torchvision's ImageFolder lays them out, decoded
// (training/data/image_codec.h), resized to the job's size (training/data/image_resize.h) and
// split into training, validation and test samples (docs/engine_jobs.md, "data of format
// image_folder").
//
// Thread safety: reads files, shares no state; safe from any thread. Decoding runs on
// spec.threads threads of its own, joined before it returns.
#ifndef TUNER_EXECUTOR_ENGINE_IMAGE_FOLDER_LOADER_H_
#define TUNER_EXECUTOR_ENGINE_IMAGE_FOLDER_LOADER_H_

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/engine/datasets.h"
#include "executor/engine/member_reader.h"

namespace tuner::engine {

// The files of one folder in ImageFolder's layout.
struct ImageFolderListing {
  std::string root;                  // the folder, as the job names it (data.dir applied)
  std::vector<std::string> classes;  // the sub-folders' names, sorted: class i is classes[i]
  std::vector<std::string> files;    // the images, by class, then by path within the class
  std::vector<int32_t> labels;       // [files.size()]: each file's class
  // Files under the class folders that are not .png, .jpg or .jpeg (any case): skipped.
  int64_t skipped = 0;
  std::string skipped_example;  // the first of them by path
};

// Lists `root`: its sub-folders (names starting with '.' left out) are the classes, sorted by
// name (bytewise); each class's images are the files below its folder, at any depth, named
// *.png, *.jpg or *.jpeg (any case; hidden ones left out), sorted by path. Errors name `path`
// (the job's data) and the folder: Error(kNotFound) when `root` does not exist, kDataLoss when
// it is not a folder, has no class sub-folders, or a class folder has no images.
ImageFolderListing list_image_folder(const std::string& root, const std::string& path);

// Says once, as one line on standard error (a trial's log), how many files the listings skipped
// (not .png / .jpg / .jpeg), with the first as an example; nothing when none. Null listings are
// left out.
void note_skipped_files(std::initializer_list<const ImageFolderListing*> listings,
                        const std::string& path);

// A DatasetLoader for spec.files (format image_folder); `sizes` is unused. Samples are
// [C, H, W] floats in [0, 1] (C 1 for data.color "grayscale", 3 for "rgb"; H x W data.size),
// held in memory: N * C * H * W * 4 bytes for N images. Errors name `path` and the file:
// Error(kNotFound) for a missing folder; kDataLoss for a file that is truncated, corrupt or
// neither PNG nor JPEG ("trial 3: job.data: /data/pets/cat/a.png: truncated PNG (...)"), the
// folders' faults of list_image_folder, and a validation or test folder whose classes are not
// the training folder's. When some files are skipped (not .png / .jpg / .jpeg), says how many,
// once, as one line on standard error (a trial's log).
Splits load_image_folder(const EngineJobSpec& spec, const SplitSizes& sizes,
                         const std::string& path);

// The members of a data object of format image_folder into spec.files, checked: path (or
// train), validation, test, size (required), color, validation_fraction, test_fraction and
// split_seed; none may be a placeholder. `data` reads `object`, whose JSON path is `data_path`.
// Errors are Error(kInvalidArgument) naming the member, e.g.
// "job.data.size: expected [H, W], two integers in [1, 16384], got [32]".
void read_image_folder_members(const nlohmann::json& object, const MemberReader& data,
                               const std::string& data_path, EngineJobSpec& spec);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_IMAGE_FOLDER_LOADER_H_
