# What `cmake --install` puts into a prefix, and the .deb that `cpack -G DEB` makes of it:
#   bin/tuner                                   the command (the service, linked statically)
#   share/tuner/ray_launcher.py                 its Ray launcher (executors.ray), found by the
#                                               command as ../share/tuner/ from its own folder
#   lib/libtuner.so.0.2.0, libtuner.so.0.2, libtuner.so, lib/libtuner.a   the tuning library
#   include/tuner/{trials,search,storage,tuner}/...   its public headers (TUNER_PUBLIC_HEADERS)
#   lib/cmake/tuner/tuner{Config,ConfigVersion,Targets}.cmake   find_package(tuner 0.2): the
#                                               imported targets tuner::tuner (shared) and
#                                               tuner::tuner_static
#   lib/pkgconfig/tuner.pc                      pkg-config --cflags --libs tuner
# The headers keep the tree's include paths (<tuner/tuner.h> includes "search/samplers/sampler.h")
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
install(PROGRAMS launch/ray_launcher.py DESTINATION "${CMAKE_INSTALL_DATADIR}/tuner")

# The public headers of the tuning library, one by one: tuner/tuner.h and what it includes, the
# space's JSON form and importers, and the registry of sampler and scheduler names. Internals
# (the samplers' numerics, storage's schema and checks, the JSON readers that need nlohmann/json)
# stay out; tests/library/install_test.sh compiles a program against the installed tree.
set(TUNER_PUBLIC_HEADERS
    trials/clock.h trials/constraints.h trials/distribution.h trials/error.h
    trials/frozen_trial.h trials/hex.h trials/param_value.h trials/params_json.h
    trials/step_metrics.h trials/system_attrs.h trials/trial_origin.h trials/trial_state.h
    search/history.h search/pareto.h search/registry.h search/rng.h
    search/space/search_space.h search/space/search_space_json.h
    search/space/import_nni.h search/space/import_wandb.h search/space/space_change.h
    search/samplers/sampler.h search/samplers/random_sampler.h search/samplers/grid_sampler.h
    search/samplers/nsga2_sampler.h search/samplers/auto_sampler.h
    search/samplers/tpe/tpe_sampler.h search/samplers/gp/gp_sampler.h
    search/schedulers/scheduler.h search/schedulers/asha.h search/schedulers/hyperband.h
    search/schedulers/median_stopping.h search/schedulers/patience.h
    search/schedulers/mo_asha.h search/schedulers/scalarized_stopping.h search/schedulers/pbt.h
    search/schedulers/pb2.h
    storage/storage.h storage/in_memory_storage.h storage/sqlite_storage.h
    tuner/study.h tuner/trial.h tuner/tuner.h)
foreach(header IN LISTS TUNER_PUBLIC_HEADERS)
  get_filename_component(header_dir "${header}" DIRECTORY)
  install(FILES "${header}" DESTINATION "${TUNER_INSTALL_INCLUDEDIR}/${header_dir}")
endforeach()

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
# A package is for other machines: cpack refuses a build compiled for this one's vector units.
configure_file(cmake/TunerCPackChecks.cmake.in "${PROJECT_BINARY_DIR}/TunerCPackChecks.cmake" @ONLY)
set(CPACK_PROJECT_CONFIG_FILE "${PROJECT_BINARY_DIR}/TunerCPackChecks.cmake")
include(CPack)
