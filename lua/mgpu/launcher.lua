--[[
mgpu.launcher -- which launcher started this process, read from the variables
it sets, and where its ranks meet to share rank 0's NVSHMEM unique id.

  torchrun   RANK, WORLD_SIZE, LOCAL_RANK (LOCAL_WORLD_SIZE); its agent's TCP
             store at MASTER_ADDR:MASTER_PORT
  mpirun     OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK (_LOCAL_SIZE) (Open MPI)
  srun       SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS),
             SLURM_LOCALID, in a step (SLURM_STEP_ID): Slurm's batch script
             has the first ones too, but it is no task of a job step

A launcher counts as present when its count variable is set (srun: a step's
task); when several are (torchrun inside an srun task), the innermost wins:
torchrun, then mpirun, then srun.  The ranks meet in MGPU_RENDEZVOUS_FILE
when it is set, else in torchrun's store, else (srun and mpirun with every
rank on one node) in a file in /tmp named after the job.  detect(getenv)
takes the environment as a function, so specs give it tables.
]]
local compat = require "mgpu.compat"
compat.mark_lib()

local M = {}
local fail = compat.fail

M.default_timeout = 120    -- seconds a rank waits for rank 0's id (MGPU_RENDEZVOUS_TIMEOUT)

-- Each launcher's variables: count may list several names (the first set
-- wins); job gives a name unique to the run, tagged with tag, or nil
-- (job_var names what would give it).
local launchers = {
  { name = "torchrun", rank = "RANK", count = { "WORLD_SIZE" }, local_rank = "LOCAL_RANK",
    local_count = "LOCAL_WORLD_SIZE", tag = "torchrun",
    job = function(env)   -- a restarted job keeps the agent's store: the restart count tells the runs apart
      return (env("TORCHELASTIC_RUN_ID") or "job") .. "." .. (env("TORCHELASTIC_RESTART_COUNT") or "0")
    end },
  { name = "mpirun", rank = "OMPI_COMM_WORLD_RANK", count = { "OMPI_COMM_WORLD_SIZE" },
    local_rank = "OMPI_COMM_WORLD_LOCAL_RANK", local_count = "OMPI_COMM_WORLD_LOCAL_SIZE", tag = "ompi",
    job_var = "PMIX_NAMESPACE", job = function(env) return env("PMIX_NAMESPACE") end },
  { name = "srun", rank = "SLURM_PROCID", count = { "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS" },
    local_rank = "SLURM_LOCALID", step = "SLURM_STEP_ID", nodes = { "SLURM_STEP_NUM_NODES", "SLURM_NNODES" },
    tag = "slurm", job_var = "SLURM_JOB_ID",
    job = function(env)
      local id = env("SLURM_JOB_ID") or env("SLURM_JOBID")
      return id and id .. "." .. env("SLURM_STEP_ID")
    end },
}

local function set(env, name) local v = env(name); return v ~= nil and v ~= "" end

-- Variable `name` as a whole number (nil when unset); anything else is an error naming it.
local function number(env, name)
  local v = env(name)
  if v == nil or v == "" then return nil end
  local digits = v:match("^%s*(%d+)%s*$")
  if not digits then fail("LAUNCH_NOT_NUMBER", name, v) end
  return tonumber(digits)
end

-- The first of the names that is set, or nil.
local function first_set(env, names)
  for _, n in ipairs(names) do if set(env, n) then return n end end
  return nil
end

-- A job's name as one word for keys and file names.
local function word(s) return (s:gsub("[^%w%.%-_]", "_"):sub(1, 120)) end

-- The rank, count and local rank launcher `l` gives, checked against each other.
local function ranks(env, l, count_var)
  local r = { launcher = l.name }
  r.count = number(env, count_var)
  r.rank, r.local_rank = number(env, l.rank), number(env, l.local_rank)
  local local_count = l.local_count and number(env, l.local_count)
  for _, v in ipairs({ { r.rank, l.rank }, { r.local_rank, l.local_rank } }) do
    if v[1] == nil then fail("LAUNCH_MISSING", l.name, count_var, v[2]) end
  end
  if r.count < 1 then fail("LAUNCH_COUNT", count_var) end
  if r.rank >= r.count then fail("LAUNCH_RANK", l.rank, r.rank, count_var, r.count) end
  if r.local_rank > r.rank then fail("LAUNCH_LOCAL_RANK", l.local_rank, r.local_rank, l.rank, r.rank) end
  if local_count and (r.local_rank >= local_count or local_count > r.count) then
    fail("LAUNCH_LOCAL_COUNT", l.local_rank, r.local_rank, l.local_count, local_count, count_var, r.count)
  end
  local nodes = l.nodes and first_set(env, l.nodes)
  if nodes then r.one_node = number(env, nodes) == 1 else r.one_node = local_count == r.count end
  return r
end

-- Where the ranks of launcher l meet: { where = "tcp://..." or "file:...", file, via (for messages) }.
local function rendezvous(env, l, r, job)
  local file = env("MGPU_RENDEZVOUS_FILE")
  if file and file ~= "" then return { where = "file:" .. file, file = file, via = "MGPU_RENDEZVOUS_FILE" } end
  if r.launcher == "torchrun" then
    local addr, port = env("MASTER_ADDR"), env("MASTER_PORT")
    for _, v in ipairs({ { addr, "MASTER_ADDR" }, { port, "MASTER_PORT" } }) do
      if v[1] == nil or v[1] == "" then fail("LAUNCH_NO_STORE", v[2]) end
    end
    local p = number(env, "MASTER_PORT")
    if p < 1 or p > 65535 then fail("LAUNCH_PORT", port) end
    if env("TORCHELASTIC_USE_AGENT_STORE") == "False" then fail("LAUNCH_NO_AGENT_STORE") end
    if addr:find(":", 1, true) and not addr:match("^%[") then addr = "[" .. addr .. "]" end   -- an IPv6 address
    return { where = "tcp://" .. addr .. ":" .. p, via = "MASTER_ADDR:MASTER_PORT" }
  end
  if r.one_node and job then
    local path = "/tmp/mgpu-rendezvous-" .. word(env("USER") or "user") .. "-" .. job
    return { where = "file:" .. path, file = path, via = "a file in /tmp (every rank on one node)" }
  end
  local why = job and "on more than one node" or "without a job name (" .. l.job_var .. ")"
  fail("LAUNCH_NO_RENDEZVOUS", r.launcher, r.count, why)
end

--- The launcher that started this process, or nil and, when it looks like
--- one but is not (Slurm's batch script), why not.  env(name) reads a
--- variable.  The result: { launcher, rank, count, local_rank } and, for
--- more than one rank, { device (the CUDA ordinal: the
--- local rank, or 0 when CUDA_VISIBLE_DEVICES shows one GPU), where, file,
--- via (what chose the rendezvous), key, timeout (seconds) }.
function M.detect(env)
  local l, count_var
  for _, x in ipairs(launchers) do
    count_var = first_set(env, x.count)
    if count_var and (not x.step or set(env, x.step)) then l = x; break end
  end
  if not l then
    if set(env, "SLURM_PROCID") then return nil, compat.message("LAUNCH_BATCH") end
    return nil
  end
  local r = ranks(env, l, count_var)
  if r.count == 1 then return r end               -- one rank: nobody to meet
  local job = l.job(env)
  job = job and l.tag .. "-" .. word(job)
  local rdzv = rendezvous(env, l, r, job)
  for k, v in pairs(rdzv) do r[k] = v end
  r.key = "mgpu/" .. (job or r.launcher) .. "/uid"
  local visible = env("CUDA_VISIBLE_DEVICES")
  r.device = (visible and visible ~= "" and not visible:find(",", 1, true)) and 0 or r.local_rank
  r.timeout = number(env, "MGPU_RENDEZVOUS_TIMEOUT") or M.default_timeout
  return r
end

return M
