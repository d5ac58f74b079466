#!/bin/sh
# The library as a C++ user gets it: `cmake --install` into a fresh prefix, then
# examples/cpp_api configured and built as a project of its own against that prefix
# (find_package(tuner 0.2 REQUIRED)) and run, and tests/library/ask_tell.cc built with pkg-config
# against libtuner.so and libtuner.a.
# The install copies what the build made; only the example's file and ask_tell.cc are compiled.
#   install_test.sh CMAKE BUILD_DIR SOURCE_DIR GENERATOR
set -eu
cmake=$1 build=$2 source=$3 generator=$4
forbidden='zmq|blas|dnnl|mkldnn|onnx|protobuf|gloo|cuda|cublas|cudnn|nccl|opencl|gomp|libtuner_'
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
prefix=$dir/prefix

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"$cmake" --install "$build" --prefix "$prefix" > "$dir/install.log" ||
  { cat "$dir/install.log"; fail "cmake --install $build failed"; }

# What the prefix holds.
libdir=$(cd "$prefix" && ls -d lib*/libtuner.a 2>/dev/null | head -n 1 | xargs -r dirname)
[ -n "$libdir" ] || fail "no libtuner.a under $prefix/lib*"
for f in bin/tuner "$libdir/libtuner.so" "$libdir/libtuner.so.0.2" "$libdir/libtuner.so.0.2.0" \
         "$libdir/cmake/tuner/tunerConfig.cmake" "$libdir/cmake/tuner/tunerConfigVersion.cmake" \
         "$libdir/cmake/tuner/tunerTargets.cmake" "$libdir/pkgconfig/tuner.pc" \
         include/tuner/tuner/tuner.h include/tuner/search/samplers/tpe/tpe_sampler.h \
         include/tuner/storage/sqlite_storage.h include/tuner/trials/error.h \
         share/tuner/ray_launcher.py; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"
done
for internal in include/tuner/storage/sqlite include/tuner/tuner/study_core.h include/tuner/wire \
                include/tuner/trials/json_reader.h include/tuner/coordinator include/tuner/sweep \
                include/tuner/executor include/tuner/training; do
  [ ! -e "$prefix/$internal" ] || fail "an internal or service header was installed: $internal"
done
# Every installed header compiles with the installed ones alone (none includes an internal).
(cd "$prefix/include/tuner" && find . -name '*.h' | sort | sed 's|^\./\(.*\)|#include "\1"|') \
  > "$dir/all_headers.cc"
c++ -std=c++20 -fsyntax-only -I"$prefix/include/tuner" "$dir/all_headers.cc" ||
  fail "the installed headers do not compile on their own (an internal header is missing?)"
soname=$(readelf -d "$prefix/$libdir/libtuner.so.0.2.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libtuner.so.0.2" ] || fail "libtuner.so.0.2.0 has SONAME '$soname', not libtuner.so.0.2"
"$prefix/bin/tuner" version | grep -q '^tuner 0\.2\.0$' || fail "bin/tuner version is not 0.2.0"

# examples/cpp_api against the prefix, as its own project; its link line holds the library and
# none of the service's.
"$cmake" -S "$source/examples/cpp_api" -B "$dir/example" -G "$generator" \
         -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > "$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; fail "configuring examples/cpp_api against $prefix failed"; }
grep -q "tuner_DIR:PATH=$prefix/$libdir/cmake/tuner" "$dir/example/CMakeCache.txt" ||
  fail "find_package(tuner) did not find the installed package"
"$cmake" --build "$dir/example" --verbose > "$dir/build.log" 2>&1 ||
  { cat "$dir/build.log"; fail "building examples/cpp_api against $prefix failed"; }
link=$(grep -E -- '-o fashion_mnist_softmax( |$)' "$dir/build.log" || true)
[ -n "$link" ] || { cat "$dir/build.log"; fail "no link line of fashion_mnist_softmax in the build log"; }
echo "$link" | grep -q "$prefix/$libdir/libtuner.so" || fail "the example does not link the installed libtuner.so: $link"
bad=$(echo "$link" | tr ' ' '\n' | grep -Ei "$forbidden" | grep -v "$prefix/$libdir/libtuner\.so" || true)
[ -z "$bad" ] || fail "the example's link line holds libraries of the service: $bad"
readelf -d "$dir/example/fashion_mnist_softmax" | grep -q 'NEEDED.*\[libtuner\.so\.0\.2\]' ||
  fail "the example does not need libtuner.so.0.2"

# pkg-config: the ask/tell program compiled with tuner.pc's flags alone, linked with the shared
# library (--libs) and with the static one (--static --libs, libtuner.a for -ltuner).
pc="env PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig pkg-config"
[ "$($pc --modversion tuner)" = "0.2.0" ] || fail "pkg-config --modversion tuner is not 0.2.0"
# shellcheck disable=SC2046
c++ -std=c++20 -O1 $($pc --cflags tuner) -c "$source/tests/library/ask_tell.cc" -o "$dir/ask_tell.o" ||
  fail "ask_tell.cc does not compile with pkg-config's flags"
# shellcheck disable=SC2046
c++ "$dir/ask_tell.o" -o "$dir/ask_tell" $($pc --libs tuner) ||
  fail "ask_tell does not link with pkg-config --libs tuner"
# shellcheck disable=SC2046
c++ "$dir/ask_tell.o" -o "$dir/ask_tell_static" \
    $($pc --static --libs tuner | sed "s#-ltuner\( \|$\)#$prefix/$libdir/libtuner.a #") ||
  fail "ask_tell does not link with libtuner.a and pkg-config --static --libs tuner"
! readelf -d "$dir/ask_tell_static" | grep -q 'NEEDED.*libtuner' ||
  fail "ask_tell_static needs libtuner.so"
LD_LIBRARY_PATH="$prefix/$libdir" "$dir/ask_tell" "$dir/study.db" | grep '^16 trials; best' ||
  fail "the pkg-config build of ask_tell did not run"
"$dir/ask_tell_static" "$dir/study_static.db" | grep '^16 trials; best' ||
  fail "the static build of ask_tell did not run"

# The example runs against the installed library.
data=/usr/share/datasets/fashion-mnist
if [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: install Debian's dataset-fashion-mnist to run the example"
  exit 0
fi
"$dir/example/fashion_mnist_softmax" --train 600 --val 300 --trials 4 --epochs 2 --threads 2 \
  > "$dir/run.log" 2>&1 || { cat "$dir/run.log"; fail "the installed example failed"; }
cat "$dir/run.log"
grep -q 'Best: trial [0-9]*, validation error' "$dir/run.log" || fail "the example printed no best trial"
echo "ok: installed into $prefix, examples/cpp_api built and run against it"
