#include "training/data/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "training/data/dataset.h"

namespace tuner::training {

// A read-only mapping of a whole file, or bytes inflated from a compressed .npz member.
struct NpyArray::Storage {
  void* map = nullptr;
  size_t map_size = 0;
  std::string inflated;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (map != nullptr) munmap(map, map_size);
  }
  std::string_view bytes() const {
    if (map != nullptr) return {static_cast<const char*>(map), map_size};
    return inflated;
  }
};

namespace {

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw DataError(name + ": " + what);
}

uint64_t le(std::string_view b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

// The value of `key` in the header's dict text, up to its end (',' or '}' outside brackets).
std::string_view dict_value(std::string_view header, std::string_view key,
                            const std::string& name) {
  const std::string quoted1 = "'" + std::string(key) + "'";
  size_t at = header.find(quoted1);
  if (at == std::string_view::npos) at = header.find("\"" + std::string(key) + "\"");
  if (at == std::string_view::npos) bad(name, "the header has no '" + std::string(key) + "'");
  at = header.find(':', at);
  if (at == std::string_view::npos) bad(name, "a malformed header");
  ++at;
  while (at < header.size() && header[at] == ' ') ++at;
  size_t end = at;
  int depth = 0;
  while (end < header.size()) {
    const char c = header[end];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    ++end;
  }
  if (depth != 0 && end < header.size()) ++end;
  return header.substr(at, end - at);
}

std::string strip_quotes(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"')) v = v.substr(1, v.size() - 2);
  return std::string(v);
}

}  // namespace

int64_t NpyArray::size() const {
  // parse() checked that the product fits the file unless a dimension is 0.
  if (std::find(shape_.begin(), shape_.end(), 0) != shape_.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

NpyArray NpyArray::parse(std::shared_ptr<const Storage> storage, std::string_view b,
                         std::string name) {
  static constexpr std::string_view kMagic("\x93NUMPY", 6);
  if (b.size() < 10 || b.substr(0, 6) != kMagic) {
    bad(name, "not an .npy file (it does not start with \\x93NUMPY)");
  }
  const int major = static_cast<unsigned char>(b[6]);
  if (major < 1 || major > 3) {
    bad(name, "format version " + std::to_string(major) + " (1 to 3 are read)");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (b.size() < 8 + len_bytes) bad(name, "truncated in its header");
  const uint64_t header_len = le(b, 8, static_cast<int>(len_bytes));
  const size_t data_at = 8 + len_bytes + header_len;
  if (b.size() < data_at) bad(name, "truncated in its header");
  const std::string_view header = b.substr(8 + len_bytes, header_len);

  NpyArray a;
  a.name_ = std::move(name);
  a.dtype_ = strip_quotes(dict_value(header, "descr", a.name_));
  const std::string& d = a.dtype_;
  if (d.size() < 3 || (d[0] != '<' && d[0] != '|' && d[0] != '=' && d[0] != '>') ||
      std::string_view("fiub").find(d[1]) == std::string_view::npos) {
    bad(a.name_, "element type " + d +
                     " is not supported (expected float32, float64, an integer type or bool)");
  }
  a.kind_ = d[1];
  a.itemsize_ = std::atoi(d.c_str() + 2);
  const bool size_ok = a.kind_ == 'f'   ? (a.itemsize_ == 4 || a.itemsize_ == 8)
                       : a.kind_ == 'b' ? a.itemsize_ == 1
                                        : (a.itemsize_ == 1 || a.itemsize_ == 2 ||
                                           a.itemsize_ == 4 || a.itemsize_ == 8);
  if (!size_ok) bad(a.name_, "element type " + d + " is not supported");
  if (d[0] == '>' && a.itemsize_ > 1) {
    bad(a.name_, "element type " + d + " is big-endian (save it little-endian: x.astype('<" +
                     d.substr(1) + "'))");
  }
  const std::string_view shape_text = dict_value(header, "shape", a.name_);
  size_t at = 0;
  while (at < shape_text.size()) {
    while (at < shape_text.size() && !std::isdigit(static_cast<unsigned char>(shape_text[at]))) {
      ++at;
    }
    if (at >= shape_text.size()) break;
    const size_t first = at;
    while (at < shape_text.size() && std::isdigit(static_cast<unsigned char>(shape_text[at]))) {
      ++at;
    }
    int64_t dim = 0;
    const auto [end, error] =
        std::from_chars(shape_text.data() + first, shape_text.data() + at, dim);
    if (error != std::errc()) {
      bad(a.name_, "the header's shape has a dimension past 2^63: " +
                       std::string(shape_text.substr(first, std::min<size_t>(at - first, 40))));
    }
    a.shape_.push_back(dim);
  }
  const std::string_view fortran = dict_value(header, "fortran_order", a.name_);
  if (fortran.starts_with("True") && a.shape_.size() > 1) {
    bad(a.name_, "stored in Fortran order (save it C-ordered: np.ascontiguousarray(a))");
  }
  // The bytes the shape needs, counted without overflow (a 0 dimension: none, whatever the
  // others); a count past 64 bits is truncation too, however large the file.
  const bool empty = std::find(a.shape_.begin(), a.shape_.end(), 0) != a.shape_.end();
  uint64_t need = empty ? 0 : static_cast<uint64_t>(a.itemsize_);
  bool fits = true;
  for (size_t i = 0; i < a.shape_.size() && !empty && fits; ++i) {
    fits = !__builtin_mul_overflow(need, static_cast<uint64_t>(a.shape_[i]), &need);
  }
  if (!fits || b.size() - data_at < need) {
    std::string shape = "(";
    for (size_t i = 0; i < a.shape_.size(); ++i) {
      shape += (i ? ", " : "") + std::to_string(a.shape_[i]);
    }
    shape += a.shape_.size() == 1 ? ",)" : ")";
    bad(a.name_, "truncated: the header's shape " + shape + " of " + d + " needs " +
                     (fits ? std::to_string(need) : std::string("over 2^64")) +
                     " bytes of data, the file has " + std::to_string(b.size() - data_at));
  }
  a.data_ = b.substr(data_at, need);
  a.storage_ = std::move(storage);
  return a;
}

namespace {

// Inflates a deflated zip member that says it holds `usize` bytes into `out`. The buffer grows
// with what the stream gives (doubling, from 64 MiB), not with what the header claims: a small
// member claiming gigabytes is refused as corrupt without taking them. Throws DataError naming
// `where`.
void inflate_member(std::string_view data, uint64_t usize, std::string& out,
                    const std::string& where) {
  constexpr uint64_t kFirst = uint64_t{64} << 20;
  constexpr uint64_t kMaxStep = uint64_t{1} << 30;  // zlib counts in 32 bits
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw DataError(where + ": zlib failed");
  uint64_t fed = 0, made = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    // One byte past the claimed size is room to see a member that holds more than it says.
    if (made == out.size() && out.size() <= usize) {
      out.resize(static_cast<size_t>(std::min(usize + 1, std::max(kFirst, 2 * out.size()))));
    }
    if (zs.avail_in == 0 && fed < data.size()) {
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + fed));
      zs.avail_in = static_cast<uInt>(std::min<uint64_t>(data.size() - fed, kMaxStep));
      fed += zs.avail_in;
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + made);
    zs.avail_out = static_cast<uInt>(std::min<uint64_t>(out.size() - made, kMaxStep));
    const uInt before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    made += before - zs.avail_out;
    if (rc == Z_OK && made > usize) break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || made != usize) throw DataError(where + ": corrupt compressed data");
  out.resize(static_cast<size_t>(usize));
}

std::shared_ptr<NpyArray::Storage> map_file(const std::string& file) {
  if (!std::filesystem::exists(file)) throw DataError(file + ": does not exist");
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(file + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw DataError(file + ": cannot stat: " + std::strerror(err));
  }
  auto s = std::make_shared<NpyArray::Storage>();
  if (st.st_size > 0) {
    void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw DataError(file + ": cannot map: " + std::strerror(err));
    }
    s->map = m;
    s->map_size = static_cast<size_t>(st.st_size);
  }
  ::close(fd);
  return s;
}

}  // namespace

NpyArray NpyArray::open(const std::string& file) {
  std::shared_ptr<Storage> s = map_file(file);
  const std::string_view bytes = s->bytes();
  return parse(std::move(s), bytes, file);
}

NpyArray NpyArray::open_npz(const std::string& file, const std::string& name) {
  std::shared_ptr<Storage> s = map_file(file);
  const std::string_view b = s->bytes();
  const std::string member = name + ".npy";
  const std::string where = file + ": member " + member;
  // The end of central directory record: the last "PK\5\6" within 64 KiB of the end.
  size_t eocd = std::string_view::npos;
  for (size_t i = b.size() >= 22 ? b.size() - 22 : 0;
       b.size() >= 22 && i + 22 <= b.size() && b.size() - i <= 65557; --i) {
    if (le(b, i, 4) == 0x06054b50) {
      eocd = i;
      break;
    }
    if (i == 0) break;
  }
  if (eocd == std::string_view::npos) throw DataError(file + ": not an .npz (zip) file");
  uint64_t entries = le(b, eocd + 10, 2);
  uint64_t cd = le(b, eocd + 16, 4);
  if ((entries == 0xFFFF || cd == 0xFFFFFFFF) && eocd >= 20 && le(b, eocd - 20, 4) == 0x07064b50) {
    const uint64_t z = le(b, eocd - 20 + 8, 8);
    if (z + 56 > b.size() || le(b, z, 4) != 0x06064b50) throw DataError(file + ": a bad zip64 end");
    entries = le(b, z + 32, 8);
    cd = le(b, z + 48, 8);
  }
  std::vector<std::string> names;
  size_t at = cd;
  for (uint64_t e = 0; e < entries; ++e) {
    if (at + 46 > b.size() || le(b, at, 4) != 0x02014b50) {
      throw DataError(file + ": a truncated or corrupt zip directory");
    }
    const uint64_t method = le(b, at + 10, 2);
    uint64_t csize = le(b, at + 20, 4), usize = le(b, at + 24, 4);
    const size_t nlen = le(b, at + 28, 2), xlen = le(b, at + 30, 2), clen = le(b, at + 32, 2);
    uint64_t local = le(b, at + 42, 4);
    if (at + 46 + nlen + xlen > b.size()) throw DataError(file + ": a truncated zip directory");
    const std::string entry(b.substr(at + 46, nlen));
    // The zip64 extra field holds the sizes and offset that do not fit 32 bits, in this order.
    for (size_t x = at + 46 + nlen; x + 4 <= at + 46 + nlen + xlen;) {
      const uint64_t id = le(b, x, 2), len = le(b, x + 2, 2);
      size_t f = x + 4;
      if (id == 0x0001) {
        if (usize == 0xFFFFFFFF) usize = le(b, f, 8), f += 8;
        if (csize == 0xFFFFFFFF) csize = le(b, f, 8), f += 8;
        if (local == 0xFFFFFFFF) local = le(b, f, 8);
      }
      x += 4 + len;
    }
    at += 46 + nlen + xlen + clen;
    names.push_back(entry);
    if (entry != member) continue;
    if (local + 30 > b.size() || le(b, local, 4) != 0x04034b50) {
      throw DataError(where + ": a corrupt local header");
    }
    const size_t data_at = local + 30 + le(b, local + 26, 2) + le(b, local + 28, 2);
    if (data_at + csize > b.size()) {
      throw DataError(where + ": truncated (the archive ends inside the member)");
    }
    const std::string_view data = b.substr(data_at, csize);
    if (method == 0) return parse(std::move(s), data, where);
    if (method != 8) {
      throw DataError(where + ": compression method " + std::to_string(method) +
                      " (stored and deflated members are read)");
    }
    auto inflated = std::make_shared<Storage>();
    inflate_member(data, usize, inflated->inflated, where);
    const std::string_view bytes = inflated->bytes();
    return parse(std::move(inflated), bytes, where);
  }
  std::string listed;
  for (const std::string& n : names) {
    if (!listed.empty()) listed += ", ";
    listed += n.ends_with(".npy") ? n.substr(0, n.size() - 4) : n;
  }
  throw DataError(file + ": no array \"" + name + "\" (it has " +
                  (listed.empty() ? std::string("none") : listed) + ")");
}

void NpyArray::read_floats(int64_t first, int64_t count, float* out) const {
  const char* p = data_.data() + first * itemsize_;
  auto each = [&]<typename T>(T) {
    for (int64_t i = 0; i < count; ++i) {
      T v;
      std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
      out[i] = static_cast<float>(v);
    }
  };
  switch (kind_) {
    case 'f':
      if (itemsize_ == 4)
        each(float{});
      else
        each(double{});
      break;
    case 'i':
      if (itemsize_ == 1)
        each(int8_t{});
      else if (itemsize_ == 2)
        each(int16_t{});
      else if (itemsize_ == 4)
        each(int32_t{});
      else
        each(int64_t{});
      break;
    default:  // 'u', 'b'
      if (itemsize_ == 1)
        each(uint8_t{});
      else if (itemsize_ == 2)
        each(uint16_t{});
      else if (itemsize_ == 4)
        each(uint32_t{});
      else
        each(uint64_t{});
  }
}

int64_t NpyArray::integer(int64_t i) const {
  const char* p = data_.data() + i * itemsize_;
  if (kind_ == 'i') {
    const uint64_t raw = le(std::string_view(p, itemsize_), 0, itemsize_);
    const int shift = 64 - 8 * itemsize_;
    return static_cast<int64_t>(raw << shift) >> shift;
  }
  return static_cast<int64_t>(le(std::string_view(p, itemsize_), 0, itemsize_));
}

}  // namespace tuner::training
