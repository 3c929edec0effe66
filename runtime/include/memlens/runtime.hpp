#pragma once
// The memlens tensor runtime: include this one header.
#include "memlens/runtime/autocast.hpp"
#include "memlens/runtime/autograd.hpp"
#include "memlens/runtime/checkpoint.hpp"
#include "memlens/runtime/device.hpp"
#include "memlens/runtime/dtype.hpp"
#include "memlens/runtime/errors.hpp"
#include "memlens/runtime/lr_scheduler.hpp"
#include "memlens/runtime/memory.hpp"
#include "memlens/runtime/nn.hpp"
#include "memlens/runtime/nn_functional.hpp"
#include "memlens/runtime/optim.hpp"
#include "memlens/runtime/tensor.hpp"
