# cmake -DREADME=<README.md> -DOUT=<file.c> -P extract_readme_example.cmake
# Cuts the README's first ```c block out into OUT, so the tests can compile
# and run the example exactly as the README shows it (tests/CMakeLists.txt,
# readme_example). The block runs from the line "```c" to the next line
# "```". Fails, naming the file, when there is no such block.
file(READ ${README} text)
string(FIND "${text}" "\n```c\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${README}: no ```c block (the example readme_example compiles)")
endif()
math(EXPR start "${start} + 6")
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "\n```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${README}: the first ```c block is not closed")
endif()
math(EXPR end "${end} + 1")
string(SUBSTRING "${rest}" 0 ${end} code)
file(WRITE ${OUT} "/* Cut out of ${README} by cmake/extract_readme_example.cmake. */\n${code}")
