# The probe's entrypoint (PID 1): busybox httpd on :8080 serving /www. PID 1 gets no default signal handling and
# httpd sets none, so this shell traps SIGTERM and exits (the kernel then ends httpd): pods stop at once.
trap 'exit 0' TERM INT
busybox httpd -f -v -p 8080 -h /www &
wait
