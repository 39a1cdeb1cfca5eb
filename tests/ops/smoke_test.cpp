#include "op_test_util.h"
TEST(Smoke, Registry) { EXPECT_EQ(tandem::OpRegistry::instance().find("Nope"), nullptr); }
