-- Host tables in and out of arrays: nested tables give the shape, ragged
-- ones are errors naming the row at the script's line, tolist nests.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of

describe("nested tables", function()
  it("give the shape to from_table and array", function()
    local a = mgpu.from_table({ { 1, 2, 3 }, { 4, 5, 6 } }, "f32")
    assert.are.same({ 2, 3 }, a.shape)
    assert.are.same({ 1, 2, 3, 4, 5, 6 }, a:to_table())
    local b = mgpu.array({ { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } }, "i32")
    assert.are.same({ 2, 2, 2 }, b.shape)
    assert.are.equal(7, b:get(2, 2, 1))
    local p = mgpu.array({ { true, false }, { false, true } }, "pred")
    assert.are.same({ true, false, false, true }, p:to_table())
  end)

  it("may be reshaped by from_table's shape", function()
    local a = mgpu.from_table({ { 1, 2 }, { 3, 4 } }, "f32", { 4 })
    assert.are.same({ 4 }, a.shape)
    assert.matches("tables_spec.lua:%d+: from_table: 4 values do not fill shape %[3%]",
                   err_of(mgpu.from_table, { { 1, 2 }, { 3, 4 } }, "f32", { 3 }))
  end)

  it("name the ragged row at the script line", function()
    assert.matches("^[^\n]*tables_spec.lua:%d+: from_table: ragged nested table: t%[2%] is a table of 2 but t%[1%] has 3 elements",
                   err_of(mgpu.from_table, { { 1, 2, 3 }, { 4, 5 } }, "f32"))
    assert.matches("tables_spec.lua:%d+: array: ragged nested table: t%[2%]%[2%] is a table of 2 but t%[1%]%[1%] has 1 element",
                   err_of(mgpu.array, { { { 1 }, { 2 } }, { { 3 }, { 4, 5 } } }, "f32"))
    assert.matches("tables_spec.lua:%d+: from_table: ragged nested table: t%[3%] is a number but t%[1%] has 2 elements",
                   err_of(mgpu.from_table, { { 1, 2 }, { 3, 4 }, 5 }, "f32"))
  end)

  it("name elements that are not numbers", function()
    assert.matches("tables_spec.lua:%d+: from_table: element t%[2%] is a string %(\"x\"%), not a number",
                   err_of(mgpu.from_table, { 1, "x", 3 }, "f32"))
    assert.matches("tables_spec.lua:%d+: from_table: element t%[2%] is a table of 1, not a number",
                   err_of(mgpu.from_table, { 1, { 2 } }, "f32"))
    assert.matches("tables_spec.lua:%d+: array: element t%[2%]%[1%] is nil, not a number",
                   err_of(mgpu.array, { { 1, 2 }, { nil, 4 } }, "f32"))
  end)
end)

describe("tolist", function()
  it("returns nested tables as numpy does, beside the flat to_table", function()
    local a = mgpu.iota({ 2, 3, 4 }, "i32")
    local l = a:tolist()
    assert.are.equal(2, #l)
    assert.are.equal(3, #l[1])
    assert.are.equal(4, #l[1][1])
    assert.are.equal(23, l[2][3][4])
    assert.are.equal(6, l[1][2][3])
    assert.are.same({ 0, 1, 2, 3 }, mgpu.iota(4, "i32"):tolist())
    assert.are.equal(24, #a:to_table())
  end)

  it("round-trips through mgpu.array", function()
    local t = { { 1.5, -2 }, { 3, 4.25 }, { 0, 7 } }
    assert.are.same(t, mgpu.array(t, "f64"):tolist())
    assert.are.same({ { true, false } }, mgpu.array({ { true, false } }, "pred"):tolist())
  end)
end)
