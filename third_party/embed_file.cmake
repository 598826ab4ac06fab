# cmake -DIN=file -DOUT=file.cpp -DSYMBOL=name -P embed_file.cmake
# Writes `extern const unsigned char SYMBOL[]; extern const unsigned SYMBOL_size;` holding IN.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){32})" "\\1\n" body "${body}")
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\n"
  "extern const unsigned char ${SYMBOL}[] = {\n${body}\n};\n"
  "extern const unsigned ${SYMBOL}_size = ${size};\n")
