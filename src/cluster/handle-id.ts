/**
 * The handle of a CNI attachment: `<network name>.<container ID>.<ifname>` (DESIGN.md), so
 * DEL by container and interface finds everything ADD wrote. Calico uses
 * `<network>.<containerID>`; adding the interface lets one container hold addresses on two
 * interfaces of the same network.
 */
export function cniHandleId(network: string, containerId: string, ifname: string): string {
  return `${network}.${containerId}.${ifname}`;
}
