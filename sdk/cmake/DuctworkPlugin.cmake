# ductwork_add_plugin(<target> SOURCES <src>... [OUTPUT_DIRECTORY <dir>])
#
# Builds lib<target>.so, a step plugin the Ductwork host can dlopen: a MODULE
# library (never linked against, only loaded) linking Ductwork::SDK, with
# hidden visibility so that the entry points DUCTWORK_PLUGIN marks are
# all it exports — plugins loaded side by side then cannot bind to each
# other's inline functions or registries.
include_guard(GLOBAL)

function(ductwork_add_plugin target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OUTPUT_DIRECTORY" "SOURCES")
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "ductwork_add_plugin(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE Ductwork::SDK)
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
endfunction()
