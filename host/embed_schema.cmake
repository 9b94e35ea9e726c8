# Generates a C++ file holding every schema/<dialect>/*.sql, in name order.
# Invoked at build time: cmake -DSCHEMA_DIR=... -DOUTPUT=... -DFUNCTION=... -P embed_schema.cmake
file(GLOB files "${SCHEMA_DIR}/*.sql")
list(SORT files)
set(body "")
foreach(f ${files})
  get_filename_component(name "${f}" NAME_WE)
  file(READ "${f}" sql)
  # "-- formerly: NAME" lines: the names this file was recorded under before
  # a renumbering (Migration::formerly).
  string(REGEX MATCHALL "-- formerly: [0-9A-Za-z_]+" former_lines "${sql}")
  set(formerly "")
  foreach(line ${former_lines})
    string(REPLACE "-- formerly: " "" former "${line}")
    string(APPEND formerly "\"${former}\", ")
  endforeach()
  string(APPEND body "    {\"${name}\", R\"ductwork_sql(${sql})ductwork_sql\", {${formerly}}},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${SCHEMA_DIR} by embed_schema.cmake. Do not edit.\n#include \"store/migrations.h\"\n\nnamespace ductwork {\n\nconst std::vector<Migration>& ${FUNCTION}() {\n  static const std::vector<Migration> migrations = {\n${body}  };\n  return migrations;\n}\n\n}  // namespace ductwork\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
