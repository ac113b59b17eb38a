-- expect: 4: from_dlpack: expected a DLPack tensor (a DLManagedTensor pointer), got number
-- mgpu.from_dlpack of a number.
local mgpu = require "mgpu"
local a = mgpu.from_dlpack(5)
