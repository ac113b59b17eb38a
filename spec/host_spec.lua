-- mgpu.host arrays: every error is at the script line and names the shapes
-- involved.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of

local function at_line(pattern, err)
  assert.matches("^[^\n]*host_spec.lua:%d+: " .. pattern, tostring(err))
end

describe("host array errors", function()
  local a = mgpu.host.zeros({ 3, 4 })
  local b = mgpu.host.zeros({ 5 })

  it("name both shapes when they do not broadcast", function()
    local ok, err = pcall(function() return a + b end)
    assert.is_false(ok)
    at_line("host arrays: shapes %[3,4%] and %[5%] do not broadcast %(dimension 1: 4 and 5%)", err)
    assert.are.equal(debug.getinfo(1, "l").currentline - 3, tonumber(err:match("host_spec.lua:(%d+):")))
    at_line("host arrays: shapes %[5%] and %[3,4%] do not broadcast", err_of(function() return b * a end))
    at_line("host arrays: shapes %[3,4%] and %[5%] do not broadcast", err_of(a.max, a, b))
    at_line("host arrays: shapes %[3,4%] and %[5%] do not broadcast", err_of(function() return a - mgpu.zeros(5) end))
  end)

  it("broadcast where NumPy does", function()
    local c = a + mgpu.host.from_table({ 1, 2, 3, 4 }) + 1
    assert.are.same({ 3, 4 }, c.shape)
    assert.are.equal(5, c:to_table()[4])
    assert.are.same({ 3, 4 }, (2 * a).shape)
  end)

  it("name the axis and the shape of a reduction", function()
    at_line("sum: axis 2 is out of range for shape %[3,4%]", err_of(a.sum, a, 2))
    at_line("amax: axis %-3 is out of range for shape %[3,4%]", err_of(a.amax, a, -3))
    at_line("mean axis must be an integer, got 0.5", err_of(a.mean, a, 0.5))
  end)

  it("name the rows and the shape of a slice", function()
    at_line("rows: rows %[2, 5%) are out of range for shape %[3,4%]", err_of(a.rows, a, 2, 3))
    at_line("rows: rows %[%-1, 0%) are out of range", err_of(a.rows, a, -1, 1))
  end)

  it("transpose 2-D arrays and name the shape of any other", function()
    local t = mgpu.host.from_table({ 1, 2, 3, 4, 5, 6 }, { 2, 3 }):transpose()
    assert.are.same({ 3, 2 }, t.shape)
    assert.are.same({ 1, 4, 2, 5, 3, 6 }, t:to_table())
    at_line("host transpose: needs a 2%-D array, got shape %[5%]", err_of(b.transpose, b))
    at_line("transpose: expected a host array %(call it as h:transpose%(...%)%), got number", err_of(a.transpose, 3))
  end)

  it("name both shapes in matmul and relerr", function()
    at_line("host matmul: needs %(M, K%) and %(K, N%) arrays, got shapes %[3,4%] and %[3,4%]",
            err_of(mgpu.host.matmul, a, a))
    at_line("host.matmul: expected a host or device array, got number", err_of(mgpu.host.matmul, a, 2))
    at_line("relerr: shapes %[3,4%] and %[5%] differ", err_of(mgpu.host.relerr, a, b))
    at_line("relerr: shapes %[5%] and %[3,4%] differ", err_of(mgpu.host.relerr, mgpu.zeros(5), a))
    at_line("relerr: expected a host or device array, got nil", err_of(mgpu.host.relerr, a))
  end)

  it("check constructors", function()
    at_line("host.zeros: a host array has at most 8 dimensions, got shape %[1,1,1,1,1,1,1,1,1%]",
            err_of(mgpu.host.zeros, { 1, 1, 1, 1, 1, 1, 1, 1, 1 }))
    at_line("host.zeros: shape%[2%] must be at least 1, got 0", err_of(mgpu.host.zeros, { 2, 0 }))
    at_line("host.from_table: 3 values for shape %[2%] %(2 elements%)", err_of(mgpu.host.from_table, { 1, 2, 3 }, { 2 }))
    at_line("host.from_table: value 2 must be a number, got string", err_of(mgpu.host.from_table, { 1, "x" }))
    at_line("host.from_table: expected a table of numbers, got number", err_of(mgpu.host.from_table, 3))
    at_line("host.from: expected an mgpu array, got number", err_of(mgpu.host.from, 3))
  end)

  it("check operands and methods called without a host array", function()
    at_line("add: host arrays combine with host arrays, device arrays and numbers, not string",
            err_of(function() return a + "x" end))
    at_line("exp: expected a host array %(call it as h:exp%(...%)%), got number", err_of(a.exp, 3))
    at_line("sum: expected a host array %(call it as h:sum%(...%)%), got nil", err_of(a.sum))
    at_line("max: expected a host array, got number and number", err_of(a.max, 1, 2))
    at_line("round: unknown dtype zz", err_of(a.round, a, "zz"))
    at_line("to_device: expected a host array", err_of(a.to_device, 7, "f32"))
  end)
end)
