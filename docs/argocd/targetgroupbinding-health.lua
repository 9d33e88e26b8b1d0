-- ArgoCD health check for elbv2.k8s.aws/TargetGroupBinding, as aws-lb-controller writes its status
-- (docs/argocd.md). ArgoCD runs it with gopher-lua (Lua 5.1) and, for a custom check, only the base,
-- table and package libraries and a reduced os: no string or math library, so only base functions
-- and `..` are used here. The binding is the global `obj`; the result is {status, message}.
--
--   Progressing  being deleted (the finalizer waits for targets to deregister); no status yet; the
--                status or its Ready condition describes an older generation than metadata.generation;
--                Ready is Unknown.
--   Healthy      Ready=True (message: the controller's, e.g. "3 targets registered for 3 endpoints",
--                and how many targets AWS reported healthy); or, for a controller that writes no Ready
--                condition (ALBC), status.observedGeneration has caught up with the spec.
--   Degraded     Ready=False: "<reason>: <message>" as the controller wrote them (ServiceNotFound,
--                TargetGroupNotFound, DeregisterAllRefused, SyncedWithOverlayIPs, ...).

local hs = {}

local function number(v)
  if v == nil then
    return nil
  end
  return tonumber(v)
end

-- A Progressing result when `observed` (what the status describes) is older than the spec.
local function behind(generation, observed, what)
  if generation == nil or observed == nil or observed >= generation then
    return nil
  end
  return {
    status = "Progressing",
    message = "Waiting for the controller to reconcile generation " .. tostring(generation)
      .. " (" .. what .. " is for generation " .. tostring(observed) .. ")",
  }
end

local function ready_condition(status)
  if status == nil or status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == "Ready" then
      return c
    end
  end
  return nil
end

local metadata = obj.metadata or {}
local generation = number(metadata.generation)
local status = obj.status

if metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted: the controller deregisters the binding's targets, then removes its finalizer"
  return hs
end

if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to reconcile the binding (no status yet)"
  return hs
end

local observed = number(status.observedGeneration)
local stale = behind(generation, observed, "status")
if stale ~= nil then
  return stale
end

local ready = ready_condition(status)
if ready == nil then
  if generation ~= nil and observed ~= nil then
    hs.status = "Healthy"
    hs.message = "Reconciled generation " .. tostring(observed) .. " (the controller writes no Ready condition)"
  else
    hs.status = "Progressing"
    hs.message = "Waiting for the controller to report the Ready condition"
  end
  return hs
end

stale = behind(generation, number(ready.observedGeneration), "Ready")
if stale ~= nil then
  return stale
end

local detail = ready.message or ""
local reason = ready.reason or ""
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = detail
  local healthy = number(status.healthyTargets)
  if healthy ~= nil then
    if hs.message ~= "" then
      hs.message = hs.message .. "; "
    end
    hs.message = hs.message .. tostring(healthy) .. " healthy in AWS"
  end
elseif ready.status == "False" then
  hs.status = "Degraded"
  if reason ~= "" and detail ~= "" then
    hs.message = reason .. ": " .. detail
  else
    hs.message = reason .. detail
  end
else
  hs.status = "Progressing"
  hs.message = "Ready is " .. tostring(ready.status)
  if reason ~= "" or detail ~= "" then
    hs.message = hs.message .. ": " .. reason
    if detail ~= "" then
      hs.message = hs.message .. " " .. detail
    end
  end
end
return hs
