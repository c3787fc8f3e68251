// The progress lines: the compile bar and the Keras epoch bar.
#include "tessera/session/Progress.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

using namespace tessera::session;

TEST(Progress, ElapsedTimeHasHoursMinutesSecondsAndTenths) {
  EXPECT_EQ(formatElapsed(2.14), "00:00:02.1");
  EXPECT_EQ(formatElapsed(3723.46), "01:02:03.5");
}

TEST(Progress, CompileBarFillsWithTheFraction) {
  EXPECT_EQ(compileBarLine(1.0, "", true, 2.1),
            "[" + std::string(50, '#') +
                "] 100% Compilation Finished [Elapsed: 00:00:02.1]");
  const std::string half = compileBarLine(0.5, "laying out memory", false, 0);
  EXPECT_EQ(half.substr(0, 53),
            "[" + std::string(25, '#') + std::string(25, '.') + "] ");
  EXPECT_NE(half.find("50% laying out memory"), std::string::npos);
}

TEST(Progress, CompileBarRedrawsOneLineAndEndsWithANewline) {
  std::ostringstream out;
  CompileProgressBar bar(out);
  bar("checking graph", 0.0);
  bar("checking graph", 0.001); // same percent: not redrawn
  bar("laying out memory", 0.3);
  bar.finish();
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\r'), 3);
  EXPECT_EQ(s.back(), '\n');
  EXPECT_NE(s.find("100% Compilation Finished"), std::string::npos);
}

TEST(Progress, KerasLineAtTheEndOfAnEpoch) {
  EXPECT_EQ(kerasProgressLine(1875, 1875, 2.2,
                              {{"loss", 0.52121}, {"accuracy", 0.81144}}),
            "1875/1875 [==============================] - 2s 1ms/step - "
            "loss: 0.5212 - accuracy: 0.8114");
}

TEST(Progress, KerasLineMidEpochShowsTheArrow) {
  const std::string s = kerasProgressLine(5, 10, 0.5, {{"loss", 1.0}});
  EXPECT_EQ(s, " 5/10 [" + std::string(14, '=') + ">" + std::string(15, '.') +
                   "] - 0s 100ms/step - loss: 1.0000");
  EXPECT_NE(s.find("100ms/step - loss: 1.0000"), std::string::npos);
}
