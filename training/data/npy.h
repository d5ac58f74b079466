// NumPy arrays from .npy files and .npz archives (numpy.save, numpy.savez and
// numpy.savez_compressed), memory-mapped: the file is mapped, not read, and a sample's values are
// converted from the mapping when they are asked for. A compressed .npz member is inflated into
// memory instead.
//
// Supported: format versions 1.0 to 3.0; little-endian (or one-byte) element types: float32,
// float64, int8 to int64, uint8 to uint64, bool; C order (fortran_order False), or any order for
// a one-dimensional array.
//
// Thread safety: an NpyArray is immutable after open; its reads are safe from any thread.
#ifndef TUNER_TRAINING_DATA_NPY_H_
#define TUNER_TRAINING_DATA_NPY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::training {

class NpyArray {
 public:
  // The array of the .npy file `file`. Throws DataError naming the file: missing or unreadable,
  // not an .npy file, an unsupported element type or order, or truncated (fewer data bytes than
  // the header's shape needs).
  static NpyArray open(const std::string& file);
  // The array `name` of the .npz archive `file` (its member NAME.npy). Throws DataError naming
  // the archive and the member: as open(), and a member that is not there (listing those that
  // are) or an archive that is not a zip file.
  static NpyArray open_npz(const std::string& file, const std::string& name);

  // "x.npy", or "data.npz: member x.npy": how messages name the array.
  const std::string& name() const { return name_; }
  // NumPy's descr ("<f4", "|u1") and its kind: 'f' float, 'i' signed, 'u' unsigned, 'b' bool.
  const std::string& dtype() const { return dtype_; }
  char kind() const { return kind_; }
  int itemsize() const { return itemsize_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  // Elements in all.
  int64_t size() const;

  // Elements [first, first + count) as float into `out`. REQUIRES: in range; `out` holds count.
  void read_floats(int64_t first, int64_t count, float* out) const;
  // Element i of an integer or bool array. REQUIRES: kind() is 'i', 'u' or 'b'; 0 <= i < size().
  int64_t integer(int64_t i) const;

  // The mapping, or the inflated member (npy.cc).
  struct Storage;

 private:
  static NpyArray parse(std::shared_ptr<const Storage> storage, std::string_view bytes,
                        std::string name);

  std::shared_ptr<const Storage> storage_;
  std::string_view data_;  // the elements, within storage_
  std::string name_;
  std::string dtype_;
  char kind_ = 0;
  int itemsize_ = 0;
  std::vector<int64_t> shape_;
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_NPY_H_
