/* test/oracle/test_b_profile.c — precision profiles: every preset parses,
 * key=value overrides land in the right field, errors are rejected with a
 * message naming the problem, the canonical spec round-trips, describe says
 * what was parsed, and the ladder only ever loosens, in order. */
#include "test_b_util.h"

static int same(const struct oc_profile *a, const struct oc_profile *b) {
  return a->in == b->in && a->acc == b->acc && a->out == b->out && a->acc_bits == b->acc_bits &&
         a->acc_round == b->acc_round && a->block == b->block && a->promote == b->promote &&
         a->fma == b->fma && a->tf32 == b->tf32 && a->ftz == b->ftz && a->math == b->math &&
         a->softmax == b->softmax && a->online_block == b->online_block && a->norm == b->norm &&
         a->out_ovf == b->out_ovf && a->masked_row == b->masked_row;
}

static void test_presets(void) {
  int before = t_fail, n = 0;
  for (int i = 0; oc_profile_preset_name(i); i++, n++) {
    const char *name = oc_profile_preset_name(i);
    struct oc_profile p, q;
    char err[400] = "x";
    EXPECT(oc_profile_parse_err(name, &p, err, sizeof err) == 0 && !err[0], "%s: %s", name, err);
    EXPECT(oc_profile_preset(name, &q) == 0 && same(&p, &q), "%s", name);
    EXPECT(!strcmp(p.name, name), "%s name %s", name, p.name);
    /* canonical spec round trip */
    char spec[400];
    oc_profile_spec(&p, spec, sizeof spec);
    struct oc_profile r;
    EXPECT(oc_profile_parse_err(spec, &r, err, sizeof err) == 0, "%s -> %s: %s", name, spec, err);
    EXPECT(same(&p, &r), "%s: spec %s parses to different settings", name, spec);
    char d1[200], d2[200];
    oc_profile_describe(&p, d1, sizeof d1);
    oc_profile_describe(&r, d2, sizeof d2);
    EXPECT(!strcmp(d1, d2), "%s: describe '%s' vs '%s'", name, d1, d2);
    /* describe names the formats it was given */
    EXPECT(strstr(d1, oc_format_info(p.in)->name) && strstr(d1, oc_format_info(p.acc)->name),
           "%s: %s", name, d1);
    EXPECT(oc_profile_u_acc(&p) > 0 && oc_profile_u_acc(&p) < 0.01, "%s u %g", name,
           oc_profile_u_acc(&p));
  }
  EXPECT(n == 15, "%d presets", n);
  struct oc_profile a, b;
  oc_profile_parse("bf16", &a);
  oc_profile_parse("bf16_fp32acc", &b);
  EXPECT(same(&a, &b), "bf16 = bf16_fp32acc");
  oc_profile_parse("fp8_wgmma_14bit", &a);
  EXPECT(oc_profile_acc_bits(&a) == 14 && a.acc_round == OC_ACC_ZERO && a.promote == 128 &&
             oc_profile_u_acc(&a) == 0x1p-13,
         "wgmma: bits %d u %g", oc_profile_acc_bits(&a), oc_profile_u_acc(&a));
  oc_profile_parse("tensorcore_fp16", &a);
  EXPECT(a.block == 4 && a.acc_round == OC_ACC_ZERO && oc_profile_u_acc(&a) == 0x1p-23, "tc");
  oc_profile_parse("fp32", &a);
  EXPECT(oc_profile_u_acc(&a) == 0x1p-24 && a.math == OC_MATH_PRECISE, "fp32");
  t_line("profiles: every preset parses, round-trips through its canonical spec and describe",
         before);
}

static void test_keys(void) {
  int before = t_fail;
  struct oc_profile p;
  char err[400], d[200];
  EXPECT(oc_profile_parse_err("fp32:math=fast:softmax=online:ftz=1:online_block=64:norm=welford",
                              &p, err, sizeof err) == 0,
         "%s", err);
  EXPECT(p.math == OC_MATH_FAST && p.softmax == OC_SOFTMAX_ONLINE && p.ftz == 1 &&
             p.online_block == 64 && p.norm == OC_NORM_WELFORD && p.in == OC_FP32,
         "fields");
  EXPECT(!strcmp(p.name, "fp32:math=fast:softmax=online:ftz=1:online_block=64:norm=welford") ||
             strlen("fp32:math=fast:softmax=online:ftz=1:online_block=64:norm=welford") >=
                 sizeof p.name,
         "name %s", p.name);
  oc_profile_describe(&p, d, sizeof d);
  EXPECT(strstr(d, "fast-math") && strstr(d, "ftz"), "describe: %s", d);
  EXPECT(oc_profile_parse("bf16_fp32acc:out=fp32:acc=fp16:round=zero:block=8:promote=32:tf32=1:"
                          "acc_bits=12:math=triton:ovf=saturate:fma=0:masked_row=zero",
                          &p) == 0,
         "parse");
  EXPECT(p.out == OC_FP32 && p.acc == OC_FP16 && p.acc_round == OC_ACC_ZERO && p.block == 8 &&
             p.promote == 32 && p.tf32 == 1 && p.acc_bits == 12 && p.math == OC_MATH_TRITON &&
             p.out_ovf == OC_OVF_SATURATE && p.fma == 0 && p.in == OC_BF16 &&
             p.masked_row == OC_MASKED_ZERO,
         "fields 2");
  EXPECT(oc_profile_u_acc(&p) == 0x1p-11, "u %g (12 bits toward zero)", oc_profile_u_acc(&p));
  char spec[400];
  struct oc_profile r;
  oc_profile_spec(&p, spec, sizeof spec);
  EXPECT(oc_profile_parse(spec, &r) == 0 && same(&p, &r), "round trip %s", spec);
  oc_profile_describe(&p, d, sizeof d);
  EXPECT(strstr(d, "toward zero") && strstr(d, "triton") && strstr(d, "12 bits"), "%s", d);
  t_line("profiles: key=value overrides set their fields; spec round trip after overrides", before);
}

static void test_errors(void) {
  int before = t_fail;
  static const struct {
    const char *spec, *msg;
  } bad[] = {
      {"fp33", "unknown preset 'fp33'"},
      {"", "unknown preset"},
      {"fp32:math=slow", "bad value 'slow' for key 'math'"},
      {"fp32:colour=red", "unknown key 'colour'"},
      {"fp32:acc=fp17", "bad value 'fp17' for key 'acc'"},
      {"fp32:block=-3", "bad value '-3' for key 'block'"},
      {"fp32:block=4x", "bad value '4x' for key 'block'"},
      {"fp32:acc_bits=99", "bad value '99' for key 'acc_bits'"},
      {"fp32:softmax", "'softmax' is not key=value"},
      {"fp32:norm=three_pass", "expected two_pass, welford or one_pass"},
      {"fp32:ovf=clamp", "bad value 'clamp' for key 'ovf'"},
      {"fp32:round=up", "bad value 'up' for key 'round'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct oc_profile p, keep;
    oc_profile_parse("fp16_fp16acc", &p);
    keep = p;
    char err[400] = "";
    EXPECT(oc_profile_parse_err(bad[i].spec, &p, err, sizeof err) == -1, "'%s' accepted",
           bad[i].spec);
    EXPECT(strstr(err, bad[i].msg) != NULL, "'%s': message '%s' lacks '%s'", bad[i].spec, err,
           bad[i].msg);
    EXPECT(same(&p, &keep) && !strcmp(p.name, keep.name), "'%s' touched the profile", bad[i].spec);
    EXPECT(oc_profile_parse(bad[i].spec, &p) == -1, "'%s' accepted by oc_profile_parse",
           bad[i].spec);
  }
  char err[400];
  struct oc_profile p;
  oc_profile_parse_err("nope", &p, err, sizeof err);
  EXPECT(strstr(err, "bf16_fp32acc") && strstr(err, "fp8_wgmma_14bit"), "lists presets: %s", err);
  printf("  e.g. %s\n", err);
  EXPECT(oc_profile_parse(NULL, &p) == -1, "NULL");
  char longspec[300];
  memset(longspec, 'a', sizeof longspec - 1);
  longspec[sizeof longspec - 1] = 0;
  EXPECT(oc_profile_parse_err(longspec, &p, err, sizeof err) == -1 && strstr(err, "longer"), "%s",
         err);
  t_line("profiles: unknown preset/key, bad values and malformed items rejected with a reason",
         before);
}

static void test_ladder(void) {
  int before = t_fail;
  struct oc_profile r[8];
  for (int i = 0; oc_profile_preset_name(i); i++) {
    struct oc_profile p;
    oc_profile_preset(oc_profile_preset_name(i), &p);
    int n = oc_profile_ladder(&p, r, 8);
    double mine = oc_dot_theta(&p, 1024, 0), prev = mine;
    EXPECT(n >= 0 && n <= 6, "%s: %d rungs", p.name, n);
    for (int k = 0; k < n; k++) {
      double th = oc_dot_theta(&r[k], 1024, 0);
      EXPECT(th > mine, "%s rung %s not looser: %g <= %g", p.name, r[k].name, th, mine);
      /* fixed order, loosening at K = 1024 except the documented near-tie:
       * 14-bit promoted every 128 is 0.01% tighter than fp16 within 32-tiles
       * there (and much tighter at small K), yet listed after it */
      int tie = !strcmp(r[k].name, "14-bit accumulation promoted every 128") && th >= prev * 0.999;
      EXPECT(th >= prev || tie, "%s: rung %d (%s) %g tighter than the one before %g", p.name, k,
             r[k].name, th, prev);
      prev = th;
      EXPECT(r[k].in == p.in && r[k].out == p.out && r[k].math == p.math,
             "%s: rung changed formats", p.name);
    }
  }
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  int n = oc_profile_ladder(&p, r, 8);
  EXPECT(n == 6, "fp32 ladder has %d rungs", n);
  EXPECT(n > 5 && !strcmp(r[0].name, "fp32 accumulation toward zero (tensor core)") &&
             !strcmp(r[1].name, "tf32 operands") &&
             !strcmp(r[2].name, "fp16 accumulation within 32-tiles") &&
             !strcmp(r[3].name, "14-bit accumulation promoted every 128") &&
             !strcmp(r[4].name, "fp16 accumulation") && !strcmp(r[5].name, "bf16 accumulation"),
         "order");
  oc_profile_parse("bf16_fp32acc", &p);
  n = oc_profile_ladder(&p, r, 8);
  EXPECT(n == 5, "bf16 ladder has %d rungs (no tf32 rung for bf16 operands)", n);
  for (int k = 0; k < n; k++)
    EXPECT(!r[k].tf32, "tf32 rung for bf16");
  oc_profile_parse("bf16_bf16acc", &p);
  n = oc_profile_ladder(&p, r, 8);
  EXPECT(n == 0, "nothing is cheaper than bf16 accumulation: %d", n);
  oc_profile_parse("fp32", &p);
  EXPECT(oc_profile_ladder(&p, r, 2) == 2, "max respected");
  t_line("profiles: ladder rungs only loosen, in order, and keep the formats", before);
}

int main(void) {
  test_presets();
  test_keys();
  test_errors();
  test_ladder();
  return t_done("test_b_profile");
}
