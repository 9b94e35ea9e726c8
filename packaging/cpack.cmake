# Installed layout and Debian packages (SPEC §14):
#   cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr
#   cmake --build build-deb -j2 && (cd build-deb && cpack -G DEB)
# (packaging/deb.sh does exactly that and runs lintian.) Two packages:
#   ductwork          the host, the service, the testkit plugin, docs, man page
#   ductwork-sdk-dev  headers, CMake package, pkg-config file, plugin template,
#                     the Python step module and its template
include(GNUInstallDirs)

set(DUCTWORK_PACKAGING_DIR ${CMAKE_CURRENT_LIST_DIR})
set(DUCTWORK_DOC_DIR ${CMAKE_INSTALL_FULL_DATADIR}/doc/ductwork)
set(DUCTWORK_SDK_DOC_DIR ${CMAKE_INSTALL_DATADIR}/doc/ductwork-sdk-dev)
set(DUCTWORK_BIN ${CMAKE_INSTALL_FULL_BINDIR}/ductwork)
set(DUCTWORK_CONFIG ${CMAKE_INSTALL_FULL_SYSCONFDIR}/ductwork/ductwork.yml)
# The ABI version abi.h declares: the SDK's version for pkg-config.
file(STRINGS ${PROJECT_SOURCE_DIR}/sdk/include/ductwork/abi.h abi_line REGEX "^#define DUCTWORK_ABI_VERSION [0-9]+u")
string(REGEX REPLACE ".* ([0-9]+)u.*" "\\1" DUCTWORK_SDK_ABI_VERSION "${abi_line}")

set(generated ${CMAKE_BINARY_DIR}/packaging)

# ---- ductwork: the host ----------------------------------------------------
install(TARGETS ductwork_testkit LIBRARY DESTINATION lib/ductwork/testkit
        COMPONENT ductwork)
install(DIRECTORY DESTINATION lib/ductwork/plugins COMPONENT ductwork)
install(FILES ${DUCTWORK_PACKAGING_DIR}/debian/ductwork.yml
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/ductwork COMPONENT ductwork)
configure_file(${DUCTWORK_PACKAGING_DIR}/debian/ductwork.service.in ${generated}/ductwork.service @ONLY)
# systemd reads units from /lib/systemd/system (Debian 12); other prefixes
# get the unit beside the docs, to copy by hand.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(DUCTWORK_UNIT_DIR /lib/systemd/system)
else()
  set(DUCTWORK_UNIT_DIR ${CMAKE_INSTALL_DATADIR}/ductwork/systemd)
endif()
install(FILES ${generated}/ductwork.service DESTINATION ${DUCTWORK_UNIT_DIR} COMPONENT ductwork)

# Debian wants man pages and changelogs compressed with gzip -n -9.
find_program(GZIP_EXECUTABLE gzip REQUIRED)
function(ductwork_gzip input output)
  add_custom_command(OUTPUT ${output}
    COMMAND ${GZIP_EXECUTABLE} -n -9 -c ${input} > ${output}
    DEPENDS ${input} VERBATIM)
endfunction()
ductwork_gzip(${DUCTWORK_PACKAGING_DIR}/man/ductwork.1 ${generated}/ductwork.1.gz)
ductwork_gzip(${DUCTWORK_PACKAGING_DIR}/debian/changelog ${generated}/changelog.Debian.gz)
add_custom_target(ductwork_package_files ALL DEPENDS ${generated}/ductwork.1.gz ${generated}/changelog.Debian.gz)
install(FILES ${generated}/ductwork.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ductwork)

foreach(component ductwork sdk)
  if(component STREQUAL "ductwork")
    set(doc_dir ${CMAKE_INSTALL_DATADIR}/doc/ductwork)
  else()
    set(doc_dir ${DUCTWORK_SDK_DOC_DIR})
  endif()
  install(FILES ${DUCTWORK_PACKAGING_DIR}/debian/copyright ${generated}/changelog.Debian.gz
          DESTINATION ${doc_dir} COMPONENT ${component})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/README.md
              ${PROJECT_SOURCE_DIR}/docs/cli.md
              ${PROJECT_SOURCE_DIR}/docs/configuration.md
              ${PROJECT_SOURCE_DIR}/docs/definitions.md
              ${PROJECT_SOURCE_DIR}/docs/recovery.md
              ${PROJECT_SOURCE_DIR}/docs/postgresql.md
              ${PROJECT_SOURCE_DIR}/docs/http-api.md
              ${PROJECT_SOURCE_DIR}/docs/dashboard.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/ductwork COMPONENT ductwork)
# The dashboard guide's screenshots, where its links point.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/images
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/ductwork COMPONENT ductwork FILES_MATCHING PATTERN "dashboard-*.png")

# ---- ductwork-sdk-dev: headers and CMake package come from sdk/ ------------
configure_file(${DUCTWORK_PACKAGING_DIR}/ductwork-sdk.pc.in ${generated}/ductwork-sdk.pc @ONLY)
install(FILES ${generated}/ductwork-sdk.pc DESTINATION ${CMAKE_INSTALL_DATADIR}/pkgconfig COMPONENT sdk)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sdk/template/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ductwork/plugin-template COMPONENT sdk)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sdk/template-python/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ductwork/python-template COMPONENT sdk)
install(FILES ${PROJECT_SOURCE_DIR}/docs/step-authors.md
        DESTINATION ${DUCTWORK_SDK_DOC_DIR} COMPONENT sdk)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/wordcount
        DESTINATION ${DUCTWORK_SDK_DOC_DIR}/examples COMPONENT sdk)

# ---- CPack -----------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ductwork)
set(CPACK_PACKAGE_VENDOR "Ductwork for C++")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Ductwork for C++ maintainers <maintainers@ductwork.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL ductwork sdk)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)

set(CPACK_DEBIAN_DUCTWORK_PACKAGE_NAME ductwork)
set(CPACK_DEBIAN_DUCTWORK_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DUCTWORK_PACKAGE_DEPENDS "adduser, tzdata")
set(CPACK_DEBIAN_DUCTWORK_PACKAGE_SUGGESTS "ductwork-sdk-dev, postgresql")
set(CPACK_DEBIAN_DUCTWORK_PACKAGE_SECTION admin)
set(CPACK_COMPONENT_DUCTWORK_DESCRIPTION "durable pipeline (workflow) engine
Ductwork runs pipelines of steps (chains, fan-out and fan-in, conditional
branches) whose implementations live in plugins built against its SDK. All
state lives in a database (SQLite, or PostgreSQL for many hosts), so a
crashed process loses nothing: its claims are recovered and its work
finishes elsewhere. Ships the ductwork command, a systemd service
(Type=notify, hardened) and the testkit plugin of the engine's own tests.")
file(WRITE ${generated}/conffiles "${CMAKE_INSTALL_FULL_SYSCONFDIR}/ductwork/ductwork.yml\n")
set(CPACK_DEBIAN_DUCTWORK_PACKAGE_CONTROL_EXTRA
    ${generated}/conffiles ${DUCTWORK_PACKAGING_DIR}/debian/postinst ${DUCTWORK_PACKAGING_DIR}/debian/postrm)

set(CPACK_DEBIAN_SDK_PACKAGE_NAME ductwork-sdk-dev)
set(CPACK_DEBIAN_SDK_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_SDK_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_SDK_PACKAGE_DEPENDS "cmake (>= 3.20) | pkgconf, g++ (>= 4:12) | clang (>= 1:14)")
set(CPACK_COMPONENT_SDK_DESCRIPTION "SDK for Ductwork step plugins
Header-only C++17 SDK to write step plugins for the Ductwork pipeline
engine: the step and context API, the C ABI boundary, a fluent pipeline
builder, and <ductwork/testing.hpp> to unit-test steps without a host.
Includes the CMake package (find_package(DuctworkSDK CONFIG)), a pkg-config
file and the template behind 'ductwork new-plugin'.
.
Also the Python module ductwork_steps (standard library only) to write
process steps in Python, with its unit-test helper, and the template
behind 'ductwork new-plugin --python'.")
set(CPACK_DEBIAN_SDK_PACKAGE_SUGGESTS "python3")

include(CPack)
