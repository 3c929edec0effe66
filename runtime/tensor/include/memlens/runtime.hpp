#pragma once
// The memlens tensor runtime: include this one header.
#include "memlens/tensor/autocast.hpp"
#include "memlens/tensor/autograd.hpp"
#include "memlens/tensor/checkpoint.hpp"
#include "memlens/allocator/device.hpp"
#include "memlens/tensor/dtype.hpp"
#include "memlens/tensor/errors.hpp"
#include "memlens/tensor/lr_scheduler.hpp"
#include "memlens/allocator/memory.hpp"
#include "memlens/tensor/nn.hpp"
#include "memlens/tensor/nn_functional.hpp"
#include "memlens/tensor/optim.hpp"
#include "memlens/tensor/tensor.hpp"
