/**
 * The node-CIDR controller's flags (`podipam controller`, `podipam serve`) → its settings, and
 * its errors worded with the flags: the service names its fields (`clusterCidrs`), the user
 * reads the flag (`--cluster-cidr`).
 */
import { ControllerConfigError, parseControllerConfig, type ControllerConfig, type ControllerSettingsField } from '../controller/controller-config.js';

/** The flags as commander gives them (strings, unvalidated). */
export interface ControllerFlags {
  readonly clusterCidr?: string;
  readonly nodeMaskSize?: string;
  readonly nodeMaskSizeV6?: string;
  readonly serviceCidr?: string;
}

/** The flag that sets each field. */
export const CONTROLLER_FLAG: Readonly<Record<ControllerSettingsField, string>> = {
  clusterCidrs: '--cluster-cidr',
  nodeMaskSize: '--node-mask-size',
  nodeMaskSizeV6: '--node-mask-size-v6',
  serviceCidrs: '--service-cidr',
};

/** Validates the flags; a TypeError naming the flag and the value when one does not validate. */
export function controllerConfigFromFlags(flags: ControllerFlags): ControllerConfig {
  try {
    return parseControllerConfig({
      clusterCidrs: flags.clusterCidr,
      nodeMaskSize: flags.nodeMaskSize,
      nodeMaskSizeV6: flags.nodeMaskSizeV6,
      serviceCidrs: flags.serviceCidr,
    });
  } catch (e) {
    if (e instanceof ControllerConfigError)
      throw new TypeError(
        e.describe((f) => CONTROLLER_FLAG[f]),
        { cause: e },
      );
    throw e;
  }
}
