// Quantization schemes: how a logical tensor is read from its parts and dequantized.
// Detection (detect.h) builds one op per quantized weight, a LogicalOp
// (core/logical_op.h) that the planner and executor drive without knowing the scheme.
#pragma once
#include "core/logical_op.h"

namespace amn {

using SchemeOp = LogicalOp;  // the name the scheme implementations use

}  // namespace amn
