# What `cmake --install` puts into a prefix, and the .deb that `cpack -G DEB` makes of it:
#   bin/tuner                                   the command (the service, linked statically)
#   lib/libtuner.so.0.2.0, libtuner.so.0.2, libtuner.so, lib/libtuner.a   the tuning library
#   include/tuner/{trials,search,storage,tuner}/*.h                        its public headers
#   lib/cmake/tuner/tuner{Config,ConfigVersion,Targets}.cmake   find_package(tuner 0.2): the
#                                               imported targets tuner::tuner (shared) and
#                                               tuner::tuner_static
#   lib/pkgconfig/tuner.pc                      pkg-config --cflags --libs tuner
# The headers keep the tree's include paths (#include <tuner/tuner.h> includes "search/samplers/sampler.h")
# under a root of their own, include/tuner, so that their folders do not land in include/ itself.
# The service (coordinator, executor, engine, registry) is installed as the command only.
include(CMakePackageConfigHelpers)

set(TUNER_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/tuner")
set(TUNER_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/tuner")

install(TARGETS tuner_shared tuner_static EXPORT tunerTargets
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        INCLUDES DESTINATION "${TUNER_INSTALL_INCLUDEDIR}")
install(TARGETS tuner RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

# The headers of the library's modules, less their internals (headers that say "Internal to"),
# the test helpers, and the JSON readers that the service's sweep files use (they need
# nlohmann/json, which the library keeps private).
install(DIRECTORY trials search storage tuner
        DESTINATION "${TUNER_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.h"
        PATTERN "testdata" EXCLUDE
        PATTERN "sqlite" EXCLUDE
        PATTERN "*_test_util.h" EXCLUDE
        PATTERN "*_test_suite.h" EXCLUDE
        PATTERN "lbfgs.h" EXCLUDE
        PATTERN "hypervolume_improvement.h" EXCLUDE
        PATTERN "json_reader.h" EXCLUDE
        PATTERN "search_space_json_value.h" EXCLUDE
        PATTERN "optuna_schema.h" EXCLUDE
        PATTERN "study_core.h" EXCLUDE
        PATTERN "trial_state_internal.h" EXCLUDE)

install(EXPORT tunerTargets NAMESPACE tuner:: DESTINATION "${TUNER_INSTALL_CMAKEDIR}")
configure_package_config_file(cmake/tunerConfig.cmake.in
                              "${PROJECT_BINARY_DIR}/tunerConfig.cmake"
                              INSTALL_DESTINATION "${TUNER_INSTALL_CMAKEDIR}")
# 0.x: a minor release may change the API, so 0.2 accepts 0.2.z only.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/tunerConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/tunerConfig.cmake" "${PROJECT_BINARY_DIR}/tunerConfigVersion.cmake"
        DESTINATION "${TUNER_INSTALL_CMAKEDIR}")

# tuner.pc finds its prefix from where it lies (${pcfiledir}), so one file serves every prefix
# (cmake --install --prefix DIR, the .deb's /usr).
file(RELATIVE_PATH TUNER_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" TUNER_PC_TO_PREFIX "${TUNER_PC_TO_PREFIX}")
configure_file(cmake/tuner.pc.in "${PROJECT_BINARY_DIR}/tuner.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/tuner.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# cpack -G DEB (in the build directory): tuner_0.2.0_<arch>.deb, installing under /usr.
set(CPACK_PACKAGE_NAME tuner)
set(CPACK_PACKAGE_VENDOR "the tuner project")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Hyperparameter tuning: the C++ tuning library (Study, Trial, samplers, schedulers, SQLite storage) and the tuner command")
set(CPACK_PACKAGE_CONTACT "tuner developers <tuner@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# The shared libraries the binaries need, found by dpkg-shlibdeps where it is installed.
find_program(TUNER_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(TUNER_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
