-- The tests of JAX's HelpersTest (tests/pallas/mosaic_gpu_test.py): planar_snake, on Lua
-- numbers and, for dynamic shapes, on traced values inside a kernel (one block per index).
local assert = require "luassert"
local C = dofile("spec/conformance/support/conf.lua")
local mgpu = C.mgpu

-- The (m, n) table (row-major) with the linear index planar_snake maps to each cell.
local function snake_table(m, n, minor, width)
  local t = {}
  for lin = 0, m * n - 1 do
    local i, j = mgpu.planar_snake(lin, { m, n }, minor, width)
    assert(t[i * n + j + 1] == nil, "a cell is reached twice")
    t[i * n + j + 1] = lin
  end
  return t
end

return function(cls)
  local test = cls.test

  for _, m in ipairs({ 4, 16 }) do
    for _, n in ipairs({ 4, 16 }) do
      for _, minor in ipairs({ 0, 1 }) do
        for _, width in ipairs({ 1, 2, 4 }) do
          for _, dynamic in ipairs({ false, true }) do
            test(string.format("test_planar_snake(m=%d, n=%d, minor_dim=%d, tile_width=%d, dynamic_shape=%s)", m, n, minor, width,
                               tostring(dynamic)), function()
              local ref, count = {}, 0      -- strips of `width` along the minor dim, every other one walked backwards
              local minor_size, major_size = m, n
              if minor == 1 then minor_size, major_size = n, m end
              for tile = 0, minor_size / width - 1 do
                for major = 0, major_size - 1 do
                  local ma = tile % 2 == 0 and major or major_size - 1 - major
                  for k = 0, width - 1 do
                    local mi = tile * width + k
                    local i, j = mi, ma
                    if minor == 1 then i, j = ma, mi end
                    ref[i * n + j + 1] = count
                    count = count + 1
                  end
                end
              end
              local got
              if dynamic then
                local k = cls.kernel{ out_shape = mgpu.shape({ m, n }, "i32"), grid = { m * n }, body = function(o)
                  local lin = mgpu.program_id(0)
                  local i, j = mgpu.planar_snake(lin, { mgpu.const(m, "i32"), mgpu.const(n, "i32") }, minor, width)
                  o:at(i, j):store(lin)
                end }
                got = k()
              else
                got = snake_table(m, n, minor, width)
              end
              C.equal(got, ref)
            end)
          end
        end
      end
    end
  end

  test("test_planar_snake_golden_with_partial_tile", function()
    C.equal(snake_table(5, 5, 0, 3), { 0, 3, 6, 9, 12, 1, 4, 7, 10, 13, 2, 5, 8, 11, 14, 23, 21, 19, 17, 15, 24, 22, 20, 18, 16 },
            "minor_dim=0 tile_width=3")
    C.equal(snake_table(5, 5, 1, 3), { 0, 1, 2, 23, 24, 3, 4, 5, 21, 22, 6, 7, 8, 19, 20, 9, 10, 11, 17, 18, 12, 13, 14, 15, 16 },
            "minor_dim=1 tile_width=3")
  end)

  test("test_planar_snake_golden", function()
    local function rows(...) return C.concat(...) end
    C.equal(snake_table(8, 8, 0, 2), rows({ 0, 2, 4, 6, 8, 10, 12, 14 }, { 1, 3, 5, 7, 9, 11, 13, 15 },
      { 30, 28, 26, 24, 22, 20, 18, 16 }, { 31, 29, 27, 25, 23, 21, 19, 17 }, { 32, 34, 36, 38, 40, 42, 44, 46 },
      { 33, 35, 37, 39, 41, 43, 45, 47 }, { 62, 60, 58, 56, 54, 52, 50, 48 }, { 63, 61, 59, 57, 55, 53, 51, 49 }),
      "minor_dim=0 tile_width=2")
    C.equal(snake_table(8, 8, 1, 2), rows({ 0, 1, 30, 31, 32, 33, 62, 63 }, { 2, 3, 28, 29, 34, 35, 60, 61 },
      { 4, 5, 26, 27, 36, 37, 58, 59 }, { 6, 7, 24, 25, 38, 39, 56, 57 }, { 8, 9, 22, 23, 40, 41, 54, 55 },
      { 10, 11, 20, 21, 42, 43, 52, 53 }, { 12, 13, 18, 19, 44, 45, 50, 51 }, { 14, 15, 16, 17, 46, 47, 48, 49 }),
      "minor_dim=1 tile_width=2")
    C.equal(snake_table(8, 8, 0, 1), rows({ 0, 1, 2, 3, 4, 5, 6, 7 }, { 15, 14, 13, 12, 11, 10, 9, 8 },
      { 16, 17, 18, 19, 20, 21, 22, 23 }, { 31, 30, 29, 28, 27, 26, 25, 24 }, { 32, 33, 34, 35, 36, 37, 38, 39 },
      { 47, 46, 45, 44, 43, 42, 41, 40 }, { 48, 49, 50, 51, 52, 53, 54, 55 }, { 63, 62, 61, 60, 59, 58, 57, 56 }),
      "minor_dim=0 tile_width=1")
  end)
end
