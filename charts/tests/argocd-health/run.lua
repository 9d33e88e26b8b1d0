-- Runs an ArgoCD health script the way ArgoCD's Lua VM does for a resource customization
-- (util/lua/lua.go in ArgoCD: gopher-lua, Lua 5.1): the object in the global `obj`, only the base,
-- table and package libraries and a reduced os, and no string library (so no string methods
-- either), the returned table read as {status, message}.
--
--   lua5.1 run.lua <health script> <object as a Lua file returning a table>
--
-- Prints the status on the first line and the message on the second; exits 2 when the script
-- errors, 3 when it returns something other than a table.
local script_path, object_path = arg[1], arg[2]
local object = dofile(object_path)

local env = {
  obj = object,
  assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs, pcall = pcall,
  print = print, select = select, tonumber = tonumber, tostring = tostring, type = type,
  unpack = unpack, xpcall = xpcall, rawequal = rawequal, rawget = rawget, rawset = rawset,
  getmetatable = getmetatable, setmetatable = setmetatable, _VERSION = _VERSION,
  require = require, table = table,
  os = { time = os.time, date = os.date, clock = os.clock },
}
env._G = env

local chunk = assert(loadfile(script_path))
setfenv(chunk, env)
-- Strings carry the string library as their metatable's __index in PUC Lua; in ArgoCD's VM that
-- library is never opened, so `s:find(...)` fails there: make it fail here too.
local string_methods = getmetatable("")
string_methods.__index = function(_, name)
  error("string method '" .. tostring(name) .. "' used: ArgoCD opens no string library for health checks", 2)
end

local ok, result = pcall(chunk)
if not ok then
  io.stderr:write(tostring(result), "\n")
  os.exit(2)
end
if type(result) ~= "table" then
  io.stderr:write("the script returned a ", type(result), ", not a table\n")
  os.exit(3)
end
io.write(tostring(result.status), "\n", tostring(result.message), "\n")
