# cmake -DROOT=<checkout> -P check_header_docs.cmake
# Doxygen checks the members of documented files only: the functions of a
# public header without a \file block would go undocumented without one
# warning. So every include/blq/*.h must open with a doc comment holding
# \file (docs/api.md); the docs target runs this before doxygen. Fails
# naming each header that does not.
file(GLOB headers ${ROOT}/include/blq/*.h)
set(bad "")
foreach(h ${headers})
  file(READ ${h} head LIMIT 16000)
  string(FIND "${head}" "*/" end)
  set(ok OFF)
  if(head MATCHES "^/\\*\\*" AND end GREATER 0)
    string(SUBSTRING "${head}" 0 ${end} comment)
    string(FIND "${comment}" "\\file" at)
    if(at GREATER 0)
      set(ok ON)
    endif()
  endif()
  if(NOT ok)
    file(RELATIVE_PATH rel ${ROOT} ${h})
    list(APPEND bad ${rel})
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "public headers that do not open with a /** \\file ... */ block "
    "(doxygen would not check their functions): ${bad}")
endif()
