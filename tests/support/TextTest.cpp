// Text for people: grouped numbers, byte counts, and text from other
// processes made safe to print on a terminal.
#include "tessera/support/Text.hpp"

#include <gtest/gtest.h>

using namespace tessera;

TEST(NumberText, GroupsDigitsAndNamesByteUnits) {
  EXPECT_EQ(groupedNumber(1234567), "1,234,567");
  EXPECT_EQ(groupedNumber(999), "999");
  EXPECT_EQ(bytesText(1536), "1,536 B (1.5 KB)");
}

TEST(PrintableText, EscapesControlCharactersThatDriveATerminal) {
  // Clear the screen, recolour, ring the bell, rewrite the line.
  EXPECT_EQ(printableText("python3 \x1b[2J\x1b[31mtrain\a\rok\n"),
            "python3 \\x1b[2J\\x1b[31mtrain\\x07\\x0dok\\x0a");
  EXPECT_EQ(printableText(std::string("a\0b\x7f", 4)), "a\\x00b\\x7f");
  // The C1 control sequence introducer U+009B, in UTF-8.
  EXPECT_EQ(printableText("x\xc2\x9b"
                          "31m"),
            "x\\u009b31m");
}

TEST(PrintableText, KeepsPrintableUtf8AndEscapesBytesThatAreNotUtf8) {
  EXPECT_EQ(
      printableText("jürgen ./train --lr 0.1 \xe2\x9c\x93 \xf0\x9f\x98\x80"),
      "jürgen ./train --lr 0.1 \xe2\x9c\x93 \xf0\x9f\x98\x80");
  EXPECT_EQ(printableText("\xff\xfe"), "\\xff\\xfe");
  // Overlong '/', a lone continuation byte, a surrogate, a cut sequence.
  EXPECT_EQ(printableText("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(printableText("\x80"), "\\x80");
  EXPECT_EQ(printableText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(printableText("ab\xe2\x9c"), "ab\\xe2\\x9c");
  EXPECT_EQ(printableText(""), "");
}
