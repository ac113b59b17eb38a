-- Error locations (issue 12): non-string errors raised in kernel bodies and
-- allocation failures are reported at the script line with what failed.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of

describe("non-string errors in a kernel body", function()
  local function kernel(body) return mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"), body = body } end

  it("name the line that raised them and dump a table", function()
    local err = err_of(kernel(function(o)
      error({ code = 7 })
    end))
    assert.are.equal("string", type(err))
    assert.matches("^[^\n]*errors_spec.lua:%d+: kernel body raised a non%-string error: { code = 7 }$", err)
    local line = tonumber(err:match("errors_spec.lua:(%d+):"))
    assert.are.equal(debug.getinfo(1, "l").currentline - 5, line)
  end)

  it("dump nested tables and lists briefly", function()
    local err = err_of(kernel(function(o) error({ 1, "two", { deep = { deeper = {} } }, name = "x" }) end))
    assert.matches('errors_spec.lua:%d+: kernel body raised a non%-string error: { 1, "two", { deep = {...} }, name = "x" }', err)
  end)

  it("use __tostring and show numbers and booleans", function()
    local obj = setmetatable({}, { __tostring = function() return "my error object" end })
    assert.matches("errors_spec.lua:%d+: kernel body raised a non%-string error: my error object",
                   err_of(kernel(function(o) error(obj) end)))
    assert.matches("errors_spec.lua:%d+: kernel body raised a non%-string error: false",
                   err_of(kernel(function(o) error(false) end)))
  end)

  it("inside traced control flow", function()
    assert.matches("errors_spec.lua:%d+: kernel body raised a non%-string error: { code = 3 }",
                   err_of(kernel(function(o)
                     mgpu.fori(0, 2, function(i) error({ code = 3 }) end)
                   end)))
  end)

  it("leave string errors as they were", function()
    assert.matches("errors_spec.lua:%d+: plain", err_of(kernel(function(o) error("plain") end)))
  end)
end)

describe("allocation failures", function()
  it("name the line, the size and the shape", function()
    local err = err_of(mgpu.zeros, { 1e13 }, "f32")
    assert.matches("^[^\n]*errors_spec.lua:%d+: zeros: cannot allocate 40000 GB %(40000000000000 bytes%) for " ..
                   "f32%[10000000000000%]: out of memory", err)
    if mgpu.interpreting() then assert.matches("host memory %(interpret mode%): ", err) end
  end)

  it("for every constructor and for kernel outputs", function()
    assert.matches("errors_spec.lua:%d+: random.normal: cannot allocate 2000 GB %(2000000000000 bytes%) for bf16%[1000000,1000000%]",
                   err_of(mgpu.random.normal, { 1e6, 1e6 }, "bf16"))
    local k = mgpu.kernel{ name = "big", grid = { 1 }, out_shape = mgpu.shape({ 1e12 }, "f32"), body = function(o) end }
    assert.matches("errors_spec.lua:%d+: kernel 'big' output 1: cannot allocate 4000 GB %(4000000000000 bytes%) for f32%[1000000000000%]",
                   err_of(k))
  end)

  it("beyond any memory without wrapping around", function()
    assert.matches("errors_spec.lua:%d+: empty: cannot allocate .- GB %(.- bytes%) for f32%[10000000000000,10000000000000%]: " ..
                   "more than any memory holds", err_of(mgpu.empty, { 1e13, 1e13 }, "f32"))
  end)
end)
