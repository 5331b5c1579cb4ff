// What forgetting lost (the Lethe distance), per quantized tensor and for the model:
// mean absolute error, RMSE, max |error|, SNR and cosine similarity between each source
// tensor and what the producer's dequantizer gives back from the written bytes, with bits
// per weight and bytes before and after. One producer for the CLI table, the --json
// document (docs/json-schema.md "forget") and the npm result.
#pragma once
#include <string>

#include "convert/plan_forget.h"

namespace amn {

struct LetheStats {
  uint64_t count = 0, non_finite = 0;
  double mae = 0, rmse = 0, max_abs_error = 0, snr_db = 0, cosine = 0;
};
LetheStats lethe_stats(const LetheSums& sums);

// After every piece ran.
std::string lethe_json(const ForgetPlan& plan);
std::string render_lethe(const ForgetPlan& plan);

}  // namespace amn
