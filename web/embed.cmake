# cmake -DINPUT=page.html -DOUTPUT=page.cc -P embed.cmake: the file's bytes as a C++ array.
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){32})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUTPUT}.tmp "// Generated from ${INPUT} by web/embed.cmake.\n#include <cstddef>\n\nnamespace tleak::web::detail {\nextern const unsigned char kPageTemplate[] = {\n${bytes}\n};\nextern const std::size_t kPageTemplateSize = ${size};\n}  // namespace tleak::web::detail\n")
file(RENAME ${OUTPUT}.tmp ${OUTPUT})
