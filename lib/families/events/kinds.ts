/** Store kinds of the event family, shared by its files without import cycles. */
export const EVENT_DESTINATION_KIND = 'event_destination';
export const EVENT_SUBSCRIPTION_KIND = 'event_subscription';
