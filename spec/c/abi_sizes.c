/*
** abi_sizes.c -- prints the size and field offsets of every public struct
** in mgpu.h, for the LuaJIT conformance spec (spec/ffi_spec.lua) to compare
** with what ffi.cdef made of the same declarations.
*/
#include <stddef.h>
#include <stdio.h>

#include "mgpu.h"

#define STRUCTS(_) \
  _(mgpu_ctx_options, mode) _(mgpu_ctx_options, device) _(mgpu_ctx_options, alloc) _(mgpu_ctx_options, alloc_ud) \
  _(mgpu_device_info, mode) _(mgpu_device_info, smem_per_block) _(mgpu_device_info, target) _(mgpu_device_info, global_mem) \
  _(mgpu_device_info, name) _(mgpu_device_info, reason) \
  _(mgpu_value_info, kind) _(mgpu_value_info, rank) _(mgpu_value_info, shape) \
  _(mgpu_kernel_options, name) _(mgpu_kernel_options, grid_rank) _(mgpu_kernel_options, grid) \
  _(mgpu_kernel_options, num_threads) _(mgpu_kernel_options, approx_math) _(mgpu_kernel_options, interpret) \
  _(mgpu_kernel_options, lowering_semantics) _(mgpu_kernel_options, reduction_scratch_bytes) _(mgpu_kernel_options, target) \
  _(mgpu_op_args, operands) _(mgpu_op_args, noperands) _(mgpu_op_args, ints) _(mgpu_op_args, nints) \
  _(mgpu_op_args, number) _(mgpu_op_args, text) \
  _(mgpu_kernel_resources, registers) _(mgpu_kernel_resources, threads) _(mgpu_kernel_resources, compile_ms) \
  _(mgpu_kernel_resources, load_ms) \
  _(mgpu_arg, buffer) _(mgpu_arg, scalar) _(mgpu_arg, address) _(mgpu_arg, integer) _(mgpu_arg, has_integer) \
  _(mgpu_launch_args, args) _(mgpu_launch_args, nargs) _(mgpu_launch_args, stream) \
  _(mgpu_param_info, role) _(mgpu_param_info, value) \
  _(mgpu_fill, kind) _(mgpu_fill, count) _(mgpu_fill, a) _(mgpu_fill, b) _(mgpu_fill, seed)

int main(void) {
#define PRINT(s, f) printf("%s %s %zu %zu\n", #s, #f, sizeof(s), offsetof(s, f));
  STRUCTS(PRINT)
  return 0;
}
