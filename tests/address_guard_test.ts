/**
 * The webhook address guard: only globally routable unicast addresses that
 * are none of the service's own host's, in every spelling the URL parser
 * reads as an address; WEBHOOK_ALLOW_PRIVATE=true lets every address
 * through. No webhook made here is ever delivered to: the service's worker
 * refuses the addresses (its WEBHOOK_ALLOW_PRIVATE is false), and the
 * public ones are checked by the guard alone.
 */
import { addressAllowed, webhookUrl } from "../src/webhooks/address.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { ADMIN, sharedService } from "./support/service.ts";

const service = sharedService({}, { bcryptCost: 4 });

/** Addresses no webhook may reach, by why. */
const REFUSED: [string, string][] = [
  ["192.0.2.1", "documentation (TEST-NET-1)"],
  ["198.51.100.7", "documentation (TEST-NET-2)"],
  ["203.0.113.9", "documentation (TEST-NET-3)"],
  ["2001:db8::1", "documentation"],
  ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"],
  ["::ffff:8.8.8.8", "IPv4-mapped, of a public address"],
  ["::ffff:808:808", "IPv4-mapped, in hex"],
  ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
  ["::ffff:0:8.8.8.8", "IPv4-translated"],
  ["::ffff:0:7f00:1", "IPv4-translated loopback"],
  ["::8.8.8.8", "IPv4-compatible"],
  ["::808:808", "IPv4-compatible, in hex"],
  ["::7f00:1", "IPv4-compatible loopback"],
  ["2002:808:808::1", "6to4"],
  ["2002:7f00:1::1", "6to4 of loopback"],
  ["64:ff9b::8.8.8.8", "NAT64"],
  ["64:ff9b::a9fe:a9fe", "NAT64 of the metadata address"],
  ["64:ff9b:1::808:808", "NAT64, local-use prefix"],
  ["2001::1", "Teredo"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["ff02::1", "multicast"],
  ["ff0e::1", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.255", "broadcast"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.254", "benchmarking"],
  ["2001:2::1", "benchmarking"],
  ["192.0.0.8", "IETF protocol assignments"],
  ["192.88.99.1", "6to4 relay anycast"],
  ["100::1", "discard"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["::1", "loopback"],
  ["10.0.0.1", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.254", "private"],
  ["192.168.1.1", "private"],
  ["100.64.0.1", "CGNAT"],
  ["100.127.255.254", "CGNAT"],
  ["169.254.1.1", "link-local"],
  ["fe80::1", "link-local"],
  ["fc00::1", "ULA"],
  ["fd12:3456:789a::1", "ULA"],
  ["169.254.169.254", "metadata"],
  ["fd00:ec2::254", "metadata"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "this network"],
  ["::", "unspecified"],
  ["example.com", "not an address"],
  ["", "not an address"],
];

/** Globally routable addresses of public resolvers: allowed. */
const ALLOWED = [
  "8.8.8.8",
  "1.1.1.1",
  "9.9.9.9",
  "2606:4700:4700::1111",
  "2001:4860:4860::8888",
];

/**
 * URL spellings of refused addresses: the URL parser reads each as an IP
 * address (decimal, hex and octal IPv4, short forms, IPv6 around IPv4).
 */
const REFUSED_URLS = [
  "http://2130706433/",
  "http://0x7f.1/",
  "http://0x7f000001/",
  "http://0177.0.0.1/",
  "http://127.1/",
  "http://0/",
  "http://3232235777/",
  "http://0xa9fea9fe/latest/meta-data/",
  "http://0xA9.0376.43518/",
  "http://[::ffff:7f00:1]/",
  "http://[::FFFF:127.0.0.1]/",
  "http://[0:0:0:0:0:ffff:7f00:1]/",
  "http://[::ffff:8.8.8.8]/",
  "http://[::ffff:0:808:808]/",
  "http://[::127.0.0.1]/",
  "http://[::8.8.8.8]/",
  "http://[64:ff9b::169.254.169.254]/",
  "http://[64:ff9b:1::808:808]/",
  "http://[2002:7f00:1::]/",
  "http://[2001::1]/",
  "http://[2001:db8::1]/",
  "http://[::]/",
  "http://[fd00:ec2::254]/latest/meta-data/",
  "http://[fe80::1]/",
  "http://[ff02::1]/",
  "https://192.0.2.1/",
  "https://198.51.100.7:8443/x",
  "http://203.0.113.9/",
  "http://224.0.0.1/",
  "http://255.255.255.255/",
  "http://240.0.0.1/",
  "http://198.18.0.1/",
  "http://192.0.0.8/",
  "http://100.64.0.1/",
  "http://169.254.169.254/",
  "http://10.0.0.1/",
  "http://172.16.0.1/",
  "http://192.168.1.1/",
  "http://127.0.0.1:8080/x",
  "http://[::1]:8080/x",
];

/** Every address of this host's interfaces, as a URL host. */
const ownHosts = () =>
  Deno.networkInterfaces().map(({ address }) => {
    const bare = address.split("%")[0];
    return bare.includes(":") ? `[${bare}]` : bare;
  });

Deno.test("the webhook guard refuses every address that is not globally routable unicast, and allows public resolvers' addresses", () => {
  for (const [ip, why] of REFUSED) {
    assertEquals(addressAllowed(ip, false), false, `${ip} (${why})`);
    if (ip.includes(".") || ip.includes(":")) {
      assertEquals(addressAllowed(ip, true), true, `${ip} with allowPrivate`);
    }
  }
  for (const ip of ALLOWED) {
    assertEquals(addressAllowed(ip, false), true, ip);
  }
});

Deno.test("every address of the service's own host is refused", () => {
  const own = Deno.networkInterfaces().map((i) => i.address.split("%")[0]);
  assert(own.length > 0, "the host has interfaces");
  for (const ip of own) assertEquals(addressAllowed(ip, false), false, ip);
});

Deno.test("a webhook URL naming a refused address in any spelling is refused; allowPrivate keeps it; public addresses and names pass", () => {
  const urls = [...REFUSED_URLS, ...ownHosts().map((h) => `http://${h}/`)];
  for (const url of urls) {
    assertEquals(webhookUrl(url, false), null, url);
    assertEquals(webhookUrl(url, true), new URL(url).href, `${url} allowed`);
  }
  for (const ip of ALLOWED) {
    const url = `https://${ip.includes(":") ? `[${ip}]` : ip}/hook`;
    assertEquals(webhookUrl(url, false), new URL(url).href, url);
  }
  assertEquals(
    webhookUrl("https://hooks.example.com/x", false),
    "https://hooks.example.com/x",
  );
});

Deno.test("POST /api/webhooks answers 400 Invalid webhook for every spelling of a refused address, the host's own included; WEBHOOK_ALLOW_PRIVATE=true creates them", async () => {
  const svc = await service();
  const urls = [...REFUSED_URLS, ...ownHosts().map((h) => `http://${h}/`)];
  for (const url of urls) {
    const res = await svc.admin.post("/api/webhooks", { body: { url } });
    assertEquals(
      [url, res.status, res.ok ? res.data : res.error],
      [url, 400, "Invalid webhook"],
    );
  }
  const allowing = svc.configured({ WEBHOOK_ALLOW_PRIVATE: "true" }).client();
  assert((await allowing.login(ADMIN.username, ADMIN.password)).ok);
  for (const url of urls) {
    const created = await allowing.post("/api/webhooks", { body: { url } });
    assertEquals([url, created.status], [url, 201]);
    assert(created.ok);
    const deleted = await allowing.delete("/api/webhooks/{id}", {
      params: { path: { id: created.data.id } },
    });
    assertEquals([url, deleted.status], [url, 200]);
  }
});
