# Turns one catalogue text file into a C source holding it as a byte array, so the
# dsq binary carries its catalogue and needs no data files at run time.
#   cmake -DIN=catalogue/en.txt -DOUT=build/catalogue_en.c -DNAME=dsq_catalogue_en -P embed.cmake
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT}.tmp
"/* Generated from ${IN} by catalogue/embed.cmake: do not edit. */\n"
"#include <stddef.h>\n"
"extern const unsigned char ${NAME}[];\n"
"extern const size_t ${NAME}_len;\n"
"const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
"const size_t ${NAME}_len = sizeof ${NAME} - 1;\n")
file(RENAME ${OUT}.tmp ${OUT})
