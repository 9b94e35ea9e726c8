# Generates a C++ file holding every file of sdk/template (the plugin
# template `ductwork new-plugin` writes), as (relative path, text) pairs.
# Invoked at build time: cmake -DTEMPLATE_DIR=... -DOUTPUT=... [-DFUNCTION=...] -P embed_template.cmake
# (FUNCTION: the name of the function returning them; plugin_template_files
# by default).
if(NOT FUNCTION)
  set(FUNCTION plugin_template_files)
endif()
file(GLOB_RECURSE files RELATIVE "${TEMPLATE_DIR}" "${TEMPLATE_DIR}/*")
list(SORT files)
set(body "")
foreach(f ${files})
  file(READ "${TEMPLATE_DIR}/${f}" text)
  string(APPEND body "    {\"${f}\", R\"ductwork_tpl(${text})ductwork_tpl\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${TEMPLATE_DIR} by embed_template.cmake. Do not edit.\n#include \"cli/plugin_template.h\"\n\nnamespace ductwork::cli {\n\nconst std::vector<TemplateFile>& ${FUNCTION}() {\n  static const std::vector<TemplateFile> files = {\n${body}  };\n  return files;\n}\n\n}  // namespace ductwork::cli\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
