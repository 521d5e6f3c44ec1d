# Writes a C++ header that embeds db/migrations/NNNN_words.sql, in version order, as raw string
# literals, so the library never looks for schema files at run time. Refuses a gap or a duplicate
# in the numbering. Run by db/CMakeLists.txt at build time:
#   cmake -DMIGRATIONS_DIR=<dir> -DOUTPUT=<header> -P embed_migrations.cmake
if(NOT MIGRATIONS_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "embed_migrations.cmake: MIGRATIONS_DIR and OUTPUT are required")
endif()
file(GLOB names RELATIVE ${MIGRATIONS_DIR} ${MIGRATIONS_DIR}/*.sql)
list(SORT names)
set(expected 1)
set(entries "")
foreach(name IN LISTS names)
  if(NOT name MATCHES "^([0-9][0-9][0-9][0-9])_[a-z0-9_]+\\.sql$")
    message(FATAL_ERROR "db/migrations/${name}: a migration is named NNNN_words.sql")
  endif()
  string(REGEX REPLACE "^0+" "" version "${CMAKE_MATCH_1}")
  if(NOT version EQUAL expected)
    message(FATAL_ERROR "db/migrations/${name}: expected migration number ${expected}")
  endif()
  file(READ ${MIGRATIONS_DIR}/${name} sql)
  string(FIND "${sql}" ")dvsql\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "db/migrations/${name}: contains the literal delimiter )dvsql\"")
  endif()
  string(APPEND entries "    {${version}, \"${name}\", R\"dvsql(${sql})dvsql\"},\n")
  math(EXPR expected "${expected} + 1")
endforeach()
if(expected EQUAL 1)
  message(FATAL_ERROR "db/migrations: no NNNN_words.sql files")
endif()
file(WRITE ${OUTPUT}.part
  "// Generated from db/migrations/*.sql by db/embed_migrations.cmake. Do not edit.\n"
  "#pragma once\n\n"
  "#include \"db/migrations.h\"\n\n"
  "namespace dv::db {\n\n"
  "inline constexpr EmbeddedMigration kEmbeddedMigrations[] = {\n"
  "${entries}"
  "};\n\n"
  "}  // namespace dv::db\n")
file(RENAME ${OUTPUT}.part ${OUTPUT})
