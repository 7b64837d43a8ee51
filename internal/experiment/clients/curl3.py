"""One HTTP/3 or HTTP/2 POST with libcurl (curl_cffi's build of libcurl
8, with nghttp2, ngtcp2 and nghttp3), printing curl's six timing variables
in seconds, as curl -w '%{time_namelookup} %{time_connect}
%{time_appconnect} %{time_pretransfer} %{time_starttransfer} %{time_total}'
does.

usage: curl3.py URL CAFILE BODY_BYTES RESPONSE_BYTES h3|h2 [1.2|1.3]
"""
import sys

from curl_cffi import Curl, CurlHttpVersion, CurlInfo, CurlOpt

url, cafile, size, resp, version = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
tls = sys.argv[6] if len(sys.argv) > 6 else "1.3"
c = Curl()
c.setopt(CurlOpt.URL, url.encode())
c.setopt(CurlOpt.CAINFO, cafile.encode())
c.setopt(CurlOpt.HTTP_VERSION, CurlHttpVersion.V3ONLY if version == "h3" else CurlHttpVersion.V2TLS)
if version == "h2":
    # CURL_SSLVERSION_TLSv1_x with the same maximum: exactly that version.
    v = 6 if tls == "1.2" else 7
    c.setopt(CurlOpt.SSLVERSION, v | (v << 16))
c.setopt(CurlOpt.IPRESOLVE, 1)  # CURL_IPRESOLVE_V4, as curl -4
c.setopt(CurlOpt.POSTFIELDS, b"\0" * size)
c.setopt(CurlOpt.POSTFIELDSIZE, size)
c.setopt(CurlOpt.HTTPHEADER, [b"Content-Type: application/octet-stream", b"Tlab-Response-Size: " + resp.encode()])
c.setopt(CurlOpt.TIMEOUT, 30)
c.setopt(CurlOpt.WRITEFUNCTION, lambda chunk: len(chunk))
c.perform()
print(" ".join(f"{c.getinfo(i):.6f}" for i in (
    CurlInfo.NAMELOOKUP_TIME, CurlInfo.CONNECT_TIME, CurlInfo.APPCONNECT_TIME,
    CurlInfo.PRETRANSFER_TIME, CurlInfo.STARTTRANSFER_TIME, CurlInfo.TOTAL_TIME)))
