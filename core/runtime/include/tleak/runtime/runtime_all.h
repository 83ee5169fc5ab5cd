// Everything a workload needs from the runtime, in one include.
#pragma once

#include "tleak/runtime/function.h"
#include "tleak/runtime/graph.h"
#include "tleak/runtime/jit.h"
#include "tleak/runtime/ops.h"
#include "tleak/runtime/random.h"
#include "tleak/runtime/runtime.h"
#include "tleak/runtime/session.h"
#include "tleak/runtime/tape.h"
#include "tleak/runtime/tensor.h"
#include "tleak/runtime/variable.h"
