# Generates a C++ file holding every schema/<dialect>/*.sql, in name order.
# Invoked at build time: cmake -DSCHEMA_DIR=... -DOUTPUT=... -DFUNCTION=... -P embed_schema.cmake
file(GLOB files "${SCHEMA_DIR}/*.sql")
list(SORT files)
set(body "")
foreach(f ${files})
  get_filename_component(name "${f}" NAME_WE)
  file(READ "${f}" sql)
  string(APPEND body "    {\"${name}\", R\"ductwork_sql(${sql})ductwork_sql\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${SCHEMA_DIR} by embed_schema.cmake. Do not edit.\n#include \"store/migrations.h\"\n\nnamespace ductwork {\n\nconst std::vector<Migration>& ${FUNCTION}() {\n  static const std::vector<Migration> migrations = {\n${body}  };\n  return migrations;\n}\n\n}  // namespace ductwork\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
