-- expect: 4: mgpu.configure: unknown option 'poison'
-- mgpu.configure with an unknown key.
local mgpu = require "mgpu"
mgpu.configure{ poison = true }
