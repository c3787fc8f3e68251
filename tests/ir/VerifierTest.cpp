// The verifier: well-formed modules pass; each kind of damage a pass could
// do is reported with the op and values involved.
#include "IrTestModels.hpp"

#include "tessera/ir/Verifier.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::ir;
using ::testing::HasSubstr;

namespace {
std::string verifyError(const Module &m, const VerifyOptions &o = {}) {
  try {
    verify(m, o);
  } catch (const Error &e) {
    return e.what();
  }
  return "(verified)";
}

struct Small {
  Module m;
  Value x, y, z;
  Small() {
    Builder b(m);
    x = b.input("x", FLOAT, {2, 3});
    y = relu(x);
    z = y + x;
  }
};
} // namespace

TEST(Verifier, BuiltModulesVerify) {
  Module m = test::everyOpModule();
  EXPECT_NO_THROW(verify(m));
  EXPECT_NO_THROW(verify(m, {.numIpus = 2}));
}

TEST(Verifier, UseBeforeDefinitionIsReported) {
  Small s;
  std::swap(s.m.mutableOps()[0], s.m.mutableOps()[1]);
  EXPECT_THAT(verifyError(s.m), HasSubstr("is not where its definition says"));
  Small t;
  t.m.mutableOps()[0].operands[0] = t.z.id();
  EXPECT_THAT(verifyError(t.m), HasSubstr("op 0 (relu): operand %2 is used "
                                          "before it is defined"));
}

TEST(Verifier, TypesThatDisagreeWithInferenceAreReported) {
  Small s;
  s.m.mutableValue(s.y.id()).type.shape = {3, 2};
  EXPECT_THAT(verifyError(s.m),
              HasSubstr("op 0 (relu): result %1 has type float[3, 2] but its "
                        "operands give float[2, 3]"));
  Small t;
  t.m.mutableOps()[1].kind = OpKind::MATMUL;
  EXPECT_THAT(verifyError(t.m), HasSubstr("matmul: %1 float[2, 3] has 3 "
                                          "columns but 'x' float[2, 3] has 2 "
                                          "rows"));
  Small u;
  u.m.mutableOps()[1].operands.push_back(u.x.id());
  EXPECT_THAT(verifyError(u.m), HasSubstr("op 1 (add) has 3 operands"));
}

TEST(Verifier, IpusBeyondTheDeviceAreReported) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2});
  {
    ShardScope s(b, 3);
    (void)neg(x);
  }
  EXPECT_NO_THROW(verify(m, {.numIpus = 4}));
  EXPECT_THAT(verifyError(m, {.numIpus = 2}),
              HasSubstr("op 0 (neg) is on IPU 3 but there are 2 IPUs (0 to "
                        "1)"));
}

TEST(Verifier, PipelineStagesMustFlowForwardThenBackward) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2});
  Value a, c;
  {
    StageScope s(b, 1);
    a = neg(x);
  }
  {
    StageScope s(b, 0);
    c = exp(a);
  }
  EXPECT_THAT(verifyError(m), HasSubstr("op 1 (exp) in forward stage 0 uses "
                                        "%1 from stage 1"));
  // Backward ops run from the last stage to the first, so the same flow
  // is right for them.
  for (Op &op : m.mutableOps())
    op.annotations.backward = true;
  EXPECT_NO_THROW(verify(m));
  m.mutableOps()[0].annotations.recompute = true;
  EXPECT_THAT(verifyError(m), HasSubstr("only forward ops can be recomputed"));
}

TEST(Verifier, BadLeavesAndOutputsAreReported) {
  Small s;
  s.m.mutableValue(s.x.id()).name = "y";
  s.m.mutableValue(s.y.id()).name = "y";
  EXPECT_THAT(verifyError(s.m), HasSubstr("the name 'y' is used by two "
                                          "values"));
  Module m;
  Builder b(m);
  Value w = b.variable("w", {2}, init::zeros());
  m.mutableValue(w.id()).type.shape = {3};
  EXPECT_NO_THROW(verify(m));
  Module m2;
  Builder b2(m2);
  Value v = b2.variable("v", {2}, init::values({1, 2}));
  m2.mutableValue(v.id()).type.shape = {3};
  EXPECT_THAT(verifyError(m2), HasSubstr("variable 'v': the initialiser has 2 "
                                         "values but the shape needs 3"));
}

TEST(Verifier, ARecordAPassBrokeIsReported) {
  Module m;
  Builder b(m);
  Value w = b.variable("w", {2}, init::ones());
  Value next = b.variable("next", {2}, init::zeros());
  b.update(w, next);
  verify(m);
  // A pass that changes the update's type in place breaks the record.
  m.mutableValue(next.id()).type = {HALF, {2}};
  try {
    verify(m);
    ADD_FAILURE() << "verify accepted the broken record";
  } catch (const IrError &e) {
    EXPECT_THAT(std::string(e.what()),
                HasSubstr("update of 'w' is 'next', of type half[2] instead "
                          "of float[2]"));
  }
}
