# tuner_module(NAME [LIBRARY] [DEPS dep...] [PRIVATE_DEPS dep...] [EXCLUDE regex...])
#
# Declares the library of one top-level folder: every *.cc below the folder that is not a test
# (*_test.cc) or a benchmark (*_benchmark.cc) is a source; the folder's parent is the include root,
# so headers are included as "search/samplers/sampler.h". Unit tests (*_test.cc beside the code) become one
# gtest executable per module, NAME_tests, registered with CTest.
#
# LIBRARY: the module is part of the installed tuning library (tuner/CMakeLists.txt makes
# libtuner.so and libtuner.a of these modules' objects), so its objects are position-independent;
# -fno-semantic-interposition keeps GCC inlining and calling them directly as in a static build.
function(tuner_module name)
  cmake_parse_arguments(ARG "LIBRARY" "" "DEPS;PRIVATE_DEPS;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.cc")
  file(GLOB_RECURSE tests CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc")
  list(FILTER sources EXCLUDE REGEX "(_test|_benchmark|/main)\\.cc$")
  foreach(pattern IN LISTS ARG_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${pattern}")
    list(FILTER tests EXCLUDE REGEX "${pattern}")
  endforeach()
  add_library(tuner_${name} STATIC ${sources})
  target_include_directories(tuner_${name} PUBLIC "${PROJECT_SOURCE_DIR}")
  target_link_libraries(tuner_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  tuner_warnings(tuner_${name})
  if(ARG_LIBRARY)
    set_target_properties(tuner_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_compile_options(tuner_${name} PRIVATE
                           $<$<CXX_COMPILER_ID:GNU>:-fno-semantic-interposition>)
  endif()
  if(TUNER_BUILD_TESTS AND tests)
    add_executable(${name}_tests ${tests})
    target_link_libraries(${name}_tests PRIVATE tuner_${name} ${ARG_PRIVATE_DEPS} GTest::gtest_main GTest::gmock)
    tuner_warnings(${name}_tests)
    # Test data is found from the source tree's root (not __FILE__, which ccache's base_dir can
    # make relative).
    target_compile_definitions(${name}_tests PRIVATE TUNER_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
    gtest_discover_tests(${name}_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
  endif()
endfunction()

function(tuner_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers>
    # GCC 12 reports std::variant<..., std::string> members as maybe-uninitialized at -O2 and
    # above when they are not (GCC bug 105562 and relatives).
    # GCC 12 also reports "literal" + std::string&& as overlapping memcpy at -O2 (GCC bug
    # 105329), a false -Wrestrict.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-maybe-uninitialized -Wno-restrict>)
endfunction()
