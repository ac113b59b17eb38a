--[[
mgpu.refcarry -- refs carried by loops (mgpu.fori, mgpu.while_loop and the
loops built on them).

A ref is a view: a root (a kernel argument, an SMEM allocation, a reshaped
allocation, ...) seen through a chain of ops (ref:at, transpose_ref,
ref:reshape).  A loop carries a ref as the starts of its chain's indices,
i32 scalars that the loop carries like any other value; in the body (and
after the loop) the ref is rebuilt from its root with those starts.  So a
carried ref keeps its root and its chain (which dims are indexed or
sliced, slice sizes, permutations, reshapes): only the indices may change,

  local cur, other = mgpu.while_loop(cond, function(i, cur, other)
    ...                                  -- cur = bufs:at(0) first, then bufs:at(1), ...
    return i + 1, other, cur
  end, 0, bufs:at(0), bufs:at(1))

and a body returning a ref of another buffer, shape or chain is an error
naming the carry, both refs and the lines that made them.  Two separate
allocations cannot alternate in one carry: allocate them as one
(mgpu.SMEM({2, ...})) and carry views of its slots.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"

local M = {}
local fail = compat.fail

-- ref -> root, steps (the chain from the root, starts left out), starts
-- (numbers or traced scalars, in chain order), and the line that made it.
local function split(r)
  local chain = {}
  local where
  while rawget(r, "from") do
    local f = rawget(r, "from")
    chain[#chain + 1] = f
    where = where or f.where
    r = f.ref
  end
  local steps, starts = {}, {}
  for i = #chain, 1, -1 do
    local f = chain[i]
    local ints = {}
    if f.op == "view" then
      local d = 0
      for j = 1, #f.ints, 3 do
        local kind, start = f.ints[j], f.ints[j + 1]
        ints[j], ints[j + 1], ints[j + 2] = kind, 0, f.ints[j + 2]
        if kind ~= trace.IDX_ALL then
          ints[j + 1] = trace.DYNAMIC
          if start == trace.DYNAMIC then d = d + 1; starts[#starts + 1] = f.dyn[d]
          else starts[#starts + 1] = start end
        end
      end
    else
      for j = 1, #f.ints do ints[j] = f.ints[j] end
    end
    steps[#steps + 1] = { op = f.op, ints = ints }
  end
  local spec = rawget(r, "spec")
  return { root = r, steps = steps, starts = starts, where = where or (spec and spec.where) }
end

local function ints_text(ints)
  local parts = {}
  for j = 1, #ints do parts[j] = ints[j] == trace.DYNAMIC and "?" or string.format("%d", ints[j]) end
  return table.concat(parts, ",")
end

-- What a split ref is, for errors: its type, root and chain.
local function describe(s, r)
  local root = s.root
  local spec = rawget(root, "spec")
  local rt = string.format("%s%s", root.dtype, compat.shape_str(root.shape))
  local text = spec and string.format("SMEM %s%s (%%%d)", rt, spec.transforms ~= "" and (" " .. spec.transforms) or "", root.id)
               or string.format("ref %s (%%%d)", rt, root.id)
  local chain = {}
  for i, st in ipairs(s.steps) do
    if st.op == "view" then
      local idx = {}
      for j = 1, #st.ints, 3 do
        local kind = st.ints[j]
        idx[#idx + 1] = kind == trace.IDX_ALL and "all" or kind == 0 and "i" or ("ds(i, " .. st.ints[j + 2] .. ")")
      end
      chain[i] = "at(" .. table.concat(idx, ", ") .. ")"
    else
      chain[i] = (st.op == "transpose_ref" and "transpose" or "reshape") .. "{" .. ints_text(st.ints) .. "}"
    end
  end
  return string.format("%s%s, %s%s", r.dtype, compat.shape_str(r.shape), #chain > 0 and (table.concat(chain, ":") .. " of ") or "",
                       text)
end

-- A start as a traced i32 (every carried index has that one type).
local function index(st)
  if not trace.is_value(st) then return trace.const(st, "i32") end
  return st.dtype == "i32" and st or st:astype("i32")
end

-- The steps as one string: two refs share a carry when root and key agree.
local function key(s)
  local parts = {}
  for i, st in ipairs(s.steps) do parts[i] = st.op .. "(" .. ints_text(st.ints) .. ")" end
  return table.concat(parts, ";")
end

--- The flat carries of a loop whose carries (inits[1..n]) hold refs, or nil
--- when none does.  Returns a plan and the flat inits (plan.n of them):
--- every ref replaced by its starts as i32 scalars.  names: the carries'
--- parameter names ("a,b,c" or nil); plan.names names the flat ones.
function M.plan(inits, n, what, names)
  local any = false
  for i = 1, n do any = any or trace.is_ref(inits[i]) end
  if not any then return nil end
  local given = {}
  for name in string.gmatch((names or "") .. ",", "([^,]*),") do given[#given + 1] = name end
  local plan, flat, fnames = { what = what, carries = {} }, {}, {}
  for i = 1, n do
    local x = inits[i]
    local c = { name = given[i] or "", pos = i }
    if trace.is_ref(x) then
      local s = split(x)
      c.split, c.key, c.desc, c.where, c.first = s, key(s), describe(s, x), s.where, #flat + 1
      for j, st in ipairs(s.starts) do
        flat[#flat + 1] = index(st)
        fnames[#flat] = c.name ~= "" and (c.name .. "#" .. j) or ""
      end
      c.count = #s.starts
    else
      flat[#flat + 1] = x
      fnames[#flat] = c.name
      c.first, c.count = #flat, 1
    end
    plan.carries[i] = c
  end
  plan.n, plan.names = #flat, table.concat(fnames, ",")
  return plan, flat
end

-- The ref of carry c rebuilt from its root with the starts vals[c.first ..].
local function rebuild(c, vals)
  local r, k = c.split.root, c.first
  for _, st in ipairs(c.split.steps) do
    if st.op == "view" then
      local dyn = {}
      for j = 1, #st.ints, 3 do
        if st.ints[j] ~= trace.IDX_ALL then dyn[#dyn + 1] = vals[k]; k = k + 1 end
      end
      r = trace.view(r, st.ints, dyn)
    elseif st.op == "transpose_ref" then
      r = r:transpose(st.ints)
    else
      r = r:reshape(st.ints)
    end
  end
  return r
end

--- The carries from flat values (region arguments or a loop's results).
function M.unflatten(plan, vals)
  local out = {}
  for i, c in ipairs(plan.carries) do
    out[i] = c.split and rebuild(c, vals) or vals[c.first]
  end
  return compat.unpack(out, 1, #plan.carries)
end

-- "(made at file:line)" style text, or nothing when the line is unknown (kernel arguments).
local function made(where, lead)
  if not where then return "" end
  return lead .. "made at " .. where .. (lead == " (" and ")" or "")
end

--- A body's results r (packed) as flat values: a carried ref must come back
--- as a ref of the same root and chain (an error naming the carry, both
--- refs and both lines otherwise).  Other results pass as they are.
function M.flatten(plan, r, what)
  if r.n ~= #plan.carries then
    fail("CARRIED_COUNT", what, r.n, #plan.carries)
  end
  local out = {}
  for i, c in ipairs(plan.carries) do
    local x = r[i]
    local label = string.format("%s: carry %d%s", plan.what, i, c.name ~= "" and (" (" .. c.name .. ")") or "")
    if c.split then
      if not trace.is_ref(x) then
        fail("CARRY_REF_DROPPED", label, c.desc, made(c.where, ", "), trace.is_value(x) and "a traced value" or type(x))
      end
      local s = split(x)
      if not rawequal(s.root, c.split.root) or key(s) ~= c.key then
        fail("CARRY_REF_CHANGED", label, c.desc, made(c.where, " ("), describe(s, x), made(s.where, " ("))
      end
      for j, st in ipairs(s.starts) do out[c.first + j - 1] = index(st) end
    else
      if trace.is_ref(x) then fail("CARRY_BECAME_REF", label) end
      out[c.first] = x
    end
  end
  return compat.unpack(out, 1, plan.n)
end

return M
