# Sourced by the CGI scripts: busybox httpd starts them with a clean environment, so the variables they need are
# read from the container's first process (httpd itself), whose environment the kubelet set.
for var in "$@"; do
  export "$var=$(busybox tr '\0' '\n' </proc/1/environ | busybox sed -n "s/^$var=//p")"
done
